/**
 * Large appends take turns per process and per tenant (LargeWrites): the pure admission rules,
 * then one API over real Postgres whose threshold is lowered to 1 KiB, so small bodies count.
 */
import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { LARGE_WRITE_DEFAULTS, LargeWrites, LargeWritesBusy, largeWriteSettingsOf } from './large-writes';

const settings = { ...LARGE_WRITE_DEFAULTS, bytes: 1024, waitMs: 60_000 };
const big = 4096;

describe('LargeWrites', () => {
  it('runs one at a time per process; the next starts when the first is released', async () => {
    const turns = new LargeWrites(settings);
    const first = await turns.enter('a', big);
    const order: string[] = [];
    const second = turns.enter('b', big).then((release) => (order.push('b'), release));
    expect(turns.load()).toEqual({ running: 1, waiting: 1 });
    // A small body passes at once.
    (await turns.enter('b', 100))();
    order.push('released a');
    first();
    (await second)();
    expect(order).toEqual(['released a', 'b']);
    expect(turns.load()).toEqual({ running: 0, waiting: 0 });
  });

  it('lets another tenant past a tenant at its own limit', async () => {
    const turns = new LargeWrites({ ...settings, inFlight: 2 });
    const a1 = await turns.enter('a', big);
    const a2 = turns.enter('a', big);
    const b1 = await turns.enter('b', big);
    expect(turns.load()).toEqual({ running: 2, waiting: 1 });
    b1();
    expect(turns.load()).toEqual({ running: 1, waiting: 1 });
    a1();
    (await a2)();
  });

  it('refuses past its queues and past its wait, with when to retry', async () => {
    const turns = new LargeWrites({ ...settings, queued: 2, queuedPerTenant: 1 });
    const held = await turns.enter('a', big);
    const waiting = turns.enter('a', big);
    await expect(turns.enter('a', big)).rejects.toBeInstanceOf(LargeWritesBusy);
    const other = turns.enter('b', big);
    await expect(turns.enter('c', big)).rejects.toMatchObject({ retryAfterSeconds: 2 });
    held();
    (await waiting)();
    (await other)();

    const hurried = new LargeWrites({ ...settings, waitMs: 1 });
    const first = await hurried.enter('a', big);
    await expect(hurried.enter('b', big)).rejects.toBeInstanceOf(LargeWritesBusy);
    expect(hurried.load()).toEqual({ running: 1, waiting: 0 });
    first();
  });

  it('reads its settings from the environment; 0 in flight turns it off', async () => {
    expect(largeWriteSettingsOf({})).toEqual(LARGE_WRITE_DEFAULTS);
    const off = new LargeWrites({ ...largeWriteSettingsOf({ LARGE_WRITES_IN_FLIGHT: '0' }), bytes: 1 });
    await Promise.all([off.enter('a', big), off.enter('a', big)]);
    expect(() => largeWriteSettingsOf({ LARGE_WRITES_PER_TENANT: '0' })).toThrow();
  });
});

const turns = new LargeWrites({ ...settings, queued: 1, queuedPerTenant: 1 });
const api = useTestApi({ server: { largeWrites: turns } });

describe('a large append past its turn', () => {
  it('waits for the one in flight, is refused past the queue with nothing written, and small ones pass', async () => {
    await newSession(api, 'lw-a');
    const body = (id: string) => ({
      messages: [{ id, role: 'user', parts: [{ type: 'text', text: 'x'.repeat(big) }] }],
    });
    const post = (session: string, payload: object) =>
      api.request({
        method: 'POST',
        url: `/v1/sessions/${session}/messages`,
        payload,
        headers: { 'content-type': 'application/json' },
      });

    // Another tenant's large write holds the process's one turn.
    const held = await turns.enter('tenant-b', big);
    const waiting = post('lw-a', body('m1'));
    await expect.poll(() => turns.load().waiting, { timeout: 30_000 }).toBe(1);
    const refused = await post('lw-a', body('m2'));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('2');
    expect(refused.json().error.code).toBe('too_many_requests');
    const small = await post('lw-a', {
      messages: [{ id: 's', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
    });
    expect(small.statusCode, small.body).toBe(201);
    const { rows } = await api.database.database.pool.query(
      `select m.id from messages m join sessions s on s.pk = m.session_pk where s.id = 'lw-a' order by m.seq`,
    );
    expect(rows.map((row) => row.id)).toEqual(['s']);

    held();
    const waited = await waiting;
    expect(waited.statusCode, waited.body).toBe(201);
    expect(turns.load()).toEqual({ running: 0, waiting: 0 });
  });
});
