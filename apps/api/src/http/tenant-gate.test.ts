/**
 * The gate's rules on their own: turns per tenant, arrival order, the bounded queue, lanes, the
 * lease, and a flooding tenant yielding to a trickling one (its clock faked). Order is observed through which `enter` promises have settled, never through time.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseEnv } from '../env';
import { TenantGate, TenantRequestsQueued, tenantGateOf, type Pass } from './tenant-gate';

/** The gate's answer to `enter`, observable without awaiting it. */
function entered(gate: TenantGate, tenant: string, lane?: string) {
  const state: { pass?: Pass; error?: unknown } = {};
  const settled = gate.enter(tenant, lane).then(
    (pass) => {
      state.pass = pass;
      return pass;
    },
    (error: unknown) => {
      state.error = error;
      throw error;
    },
  );
  // A refusal is read from `state` or awaited later: not an unhandled rejection meanwhile.
  settled.catch(() => undefined);
  return Object.assign(state, { settled });
}

/** Lets every promise the gate resolved run its callbacks. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const HOUR = 3_600_000;

describe('TenantGate', () => {
  it("admits a tenant's requests `inFlight` at a time, the rest in arrival order as turns come back", async () => {
    const gate = new TenantGate({ inFlight: 2, queued: 10, queuedPerLane: 10, leaseMs: HOUR });
    const requests = Array.from({ length: 5 }, () => entered(gate, 'a'));
    await settle();
    expect(requests.map((r) => r.pass !== undefined)).toEqual([true, true, false, false, false]);
    expect(gate.load('a')).toEqual({ running: 2, waiting: 3 });

    requests[1]!.pass!.leave();
    requests[1]!.pass!.leave(); // a second leave gives back nothing more
    await settle();
    expect(requests.map((r) => r.pass !== undefined)).toEqual([true, true, true, false, false]);
    expect(gate.load('a')).toEqual({ running: 2, waiting: 2 });

    for (const request of requests.slice(0, 3)) request.pass!.leave();
    await settle();
    expect(gate.load('a')).toEqual({ running: 2, waiting: 0 });
  });

  it("admits another tenant at once while one tenant's turns are all taken and its queue is full", async () => {
    const gate = new TenantGate({ inFlight: 1, queued: 2, queuedPerLane: 10, leaseMs: HOUR });
    const ofA = Array.from({ length: 4 }, () => entered(gate, 'a'));
    const ofB = entered(gate, 'b');
    await settle();
    expect(ofB.pass).toBeDefined();
    expect(ofA.map((r) => r.pass !== undefined)).toEqual([true, false, false, false]);
    // The fourth found A's queue full: refused, with when to retry, and never queued.
    await expect(ofA[3]!.settled).rejects.toBeInstanceOf(TenantRequestsQueued);
    expect(ofA[3]!.error).toMatchObject({ retryAfterSeconds: 1 });
    expect(gate.load('a')).toEqual({ running: 1, waiting: 2 });
    expect(gate.load('b')).toEqual({ running: 1, waiting: 0 });
  });

  it('admits one request per lane at a time, letting later requests of other lanes pass', async () => {
    const gate = new TenantGate({ inFlight: 2, queued: 10, queuedPerLane: 10, leaseMs: HOUR });
    const first = entered(gate, 'a', 's1');
    const second = entered(gate, 'a', 's1');
    const other = entered(gate, 'a', 's2');
    const third = entered(gate, 'a', 's1');
    await settle();
    expect([first, second, other, third].map((r) => r.pass !== undefined)).toEqual([
      true,
      false,
      true,
      false,
    ]);

    first.pass!.leave();
    await settle();
    // s1's next in order, not its third: one lane's requests keep their order.
    expect([second, third].map((r) => r.pass !== undefined)).toEqual([true, false]);
    second.pass!.leave();
    await settle();
    expect(third.pass).toBeDefined();
  });

  it("refuses a lane's next request once as many as it may queue wait, while other lanes still queue", async () => {
    const gate = new TenantGate({ inFlight: 1, queued: 10, queuedPerLane: 1, leaseMs: HOUR });
    const running = entered(gate, 'a', 's1');
    const waiting = entered(gate, 'a', 's1');
    const refused = entered(gate, 'a', 's1');
    const otherLane = entered(gate, 'a', 's2');
    await expect(refused.settled).rejects.toThrow(/writes to this session/);
    expect(refused.error).toBeInstanceOf(TenantRequestsQueued);
    expect(otherLane.error).toBeUndefined();
    expect(gate.load('a')).toEqual({ running: 1, waiting: 2 });

    running.pass!.leave();
    await settle();
    expect(waiting.pass).toBeDefined();
    // Its waiting request admitted, the lane may queue one again.
    const again = entered(gate, 'a', 's1');
    await settle();
    expect(again.error).toBeUndefined();
    expect(gate.load('a')).toEqual({ running: 1, waiting: 2 });
  });

  it('stops counting a request past its lease, but keeps its lane until it leaves', async () => {
    const gate = new TenantGate({ inFlight: 1, queued: 10, queuedPerLane: 10, leaseMs: 20 });
    const slow = entered(gate, 'a', 's1');
    const sameSession = entered(gate, 'a', 's1');
    const otherSession = entered(gate, 'a', 's2');
    // Resolves when the lease runs out and the turn goes on.
    const next = await otherSession.settled;
    expect(slow.pass).toBeDefined();
    expect(sameSession.pass).toBeUndefined();
    expect(gate.load('a')).toEqual({ running: 1, waiting: 1 });

    next.leave();
    await settle();
    expect(sameSession.pass).toBeUndefined(); // s1 is still the slow request's
    slow.pass!.leave();
    await sameSession.settled;
    sameSession.pass!.leave();
    expect(gate.load('a')).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses at once when no request may wait', async () => {
    const gate = new TenantGate({ inFlight: 1, queued: 0, queuedPerLane: 10, leaseMs: HOUR });
    const first = entered(gate, 'a');
    await expect(entered(gate, 'a').settled).rejects.toBeInstanceOf(TenantRequestsQueued);
    await settle();
    first.pass!.leave();
    expect(gate.load('a')).toEqual({ running: 0, waiting: 0 });
  });

  it('is made from the environment: 2 in flight, 128 waiting and 32 per session by default, none with 0 in flight', async () => {
    const defaults = tenantGateOf(parseEnv({}))!;
    const requests = Array.from({ length: 131 }, () => entered(defaults, 'a'));
    await settle();
    expect(defaults.load('a')).toEqual({ running: 2, waiting: 128 });
    expect(requests.at(-1)!.error).toBeInstanceOf(TenantRequestsQueued);
    for (const request of requests) request.pass?.leave();

    expect(tenantGateOf(parseEnv({ TENANT_REQUESTS_IN_FLIGHT: '0' }))).toBeUndefined();
    expect(() => parseEnv({ TENANT_REQUESTS_QUEUED: '-1' })).toThrow(/TENANT_REQUESTS_QUEUED/);
  });

  describe('a tenant yielding to another', () => {
    afterEach(() => vi.useRealTimers());
    const settings = { inFlight: 2, queued: 10, queuedPerLane: 10, leaseMs: HOUR, yieldMs: 100 };

    /** A's two turns kept busy for 500 ms and two more of its requests waiting: a flood. */
    async function flooding(gate: TenantGate) {
      const ofA = Array.from({ length: 4 }, () => entered(gate, 'a'));
      vi.advanceTimersByTime(500);
      await settle();
      return ofA;
    }

    it("holds a flooding tenant's next request while a trickling tenant's runs, then gives it one turn for a second", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const gate = new TenantGate(settings);
      const ofA = await flooding(gate);
      const ofB = entered(gate, 'b');
      await settle();
      expect(ofB.pass).toBeDefined();

      ofA[0]!.pass!.leave();
      await settle();
      // A has a turn free, but B (less time on its record, nothing waiting) has a request running.
      expect(ofA[2]!.pass).toBeUndefined();
      expect(gate.load('a')).toEqual({ running: 1, waiting: 2 });

      vi.advanceTimersByTime(10);
      ofB.pass!.leave();
      await settle();
      // B is done, but A yielded: one request at a time.
      expect(ofA[2]!.pass).toBeUndefined();
      ofA[1]!.pass!.leave();
      await settle();
      expect(ofA[2]!.pass).toBeDefined();
      expect(gate.load('a')).toEqual({ running: 1, waiting: 1 });

      vi.advanceTimersByTime(1_000); // a second without yielding: both turns again
      const more = entered(gate, 'a');
      await settle();
      expect(more.pass).toBeDefined();
      expect(gate.load('a')).toEqual({ running: 2, waiting: 1 });
    });

    it('holds it for `yieldMs` at most, and never holds a lone tenant or one as busy as the other', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const gate = new TenantGate(settings);
      const ofA = await flooding(gate);
      const ofB = entered(gate, 'b');
      ofA[0]!.pass!.leave();
      ofA[1]!.pass!.leave();
      vi.advanceTimersByTime(99);
      await settle();
      expect(gate.load('a')).toEqual({ running: 0, waiting: 2 });
      vi.advanceTimersByTime(1); // B's request, still running, is no longer young
      await settle();
      expect(ofA[2]!.pass).toBeDefined();
      expect(ofA[3]!.pass).toBeUndefined();
      ofB.pass!.leave();

      // B floods too (requests waiting): A does not yield to it.
      const moreOfB = Array.from({ length: 3 }, () => entered(gate, 'b'));
      await settle();
      ofA[2]!.pass!.leave();
      await settle();
      expect(ofA[3]!.pass).toBeDefined();
      expect(moreOfB.map((r) => r.pass !== undefined)).toEqual([true, true, false]);

      const alone = new TenantGate(settings);
      const lone = await flooding(alone);
      lone[0]!.pass!.leave();
      await settle();
      expect(lone[2]!.pass).toBeDefined();
    });

    it('is off with no `yieldMs`', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const gate = new TenantGate({ ...settings, yieldMs: 0 });
      const ofA = await flooding(gate);
      entered(gate, 'b');
      ofA[0]!.pass!.leave();
      await settle();
      expect(ofA[2]!.pass).toBeDefined();
    });
  });
});
