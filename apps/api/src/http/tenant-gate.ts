import { TooManyRequests } from '@compactor/sessions';
import type { Env } from '../env';
import { TenantUsage } from './tenant-gate-usage';

/** How a tenant's requests are admitted to do their work (see {@link TenantGate}). */
export interface TenantGateSettings {
  /** Requests of one tenant doing their work at once in this process. */
  inFlight: number;
  /** Requests of one tenant waiting for their turn; the next one is refused. */
  queued: number;
  /**
   * Requests of one lane (writes to one session) waiting; the next one is refused, so one
   * hammered session cannot fill its tenant's whole queue (`SESSION_WRITE_QUEUE_LIMIT`).
   */
  queuedPerLane: number;
  /**
   * How long an admitted request counts against its tenant's `inFlight`. A slow one (an
   * enqueue waiting for Redis, a statement waiting for a lock) then stops holding up its tenant's
   * other requests; the pool's reserve still bounds the connections a tenant holds.
   */
  leaseMs: number;
  /**
   * How long a tenant's next request waits for another tenant's younger running request when that
   * tenant has had less of this process's time lately (see {@link TenantGate}); 0: never.
   */
  yieldMs?: number;
}

/**
 * The lease when none is set: an append takes milliseconds alone and a few hundred on a loaded
 * machine, so only a request waiting on something else outlives it.
 */
export const DEFAULT_TENANT_LEASE_MS = 1_000;

/**
 * How long the time a tenant's requests held their turns stays on its record: halved about every
 * 0.7 s, so a tenant that stopped flooding a second ago counts as busy no longer.
 */
const USAGE_DECAY_MS = 1_000;

/** How long a tenant that yielded runs one request at a time (see {@link TenantGate}). */
const CONTESTED_MS = 1_000;

/** What Retry-After says to a tenant whose queue is full: its queued requests take well under that. */
const QUEUE_FULL_RETRY_AFTER_SECONDS = 1;

/** A tenant's queue of requests waiting for their turn is full. */
export class TenantRequestsQueued extends TooManyRequests {}

/** An admitted request's hold on its tenant's turn: `leave` when its work is done (idempotent). */
export interface Pass {
  leave(): void;
}

interface Waiter {
  lane: string | undefined;
  admit: () => void;
}

/** One tenant's requests: how many are counted in flight, which lanes are taken, who waits. */
interface TenantLine {
  running: number;
  /** The sum of the start times of the requests counted in `running` (their elapsed time in O(1)). */
  startedSum: number;
  /** The start time of the youngest request counted in `running`. */
  youngest: number;
  /** Until when the tenant runs one request at a time: it yielded to another tenant lately. */
  contestedUntil: number;
  lanes: Set<string>;
  waiting: Waiter[];
  /** Waiting requests by lane. */
  waitingInLane: Map<string, number>;
}

/**
 * Per-tenant admission of requests: at most `inFlight` of a tenant's requests do their work at
 * once in this process, the others wait here in arrival order (at most `queued` of them, then
 * {@link TenantRequestsQueued}). A flooding tenant then has a few requests on the event loop and
 * the pool, not a hundred, and another tenant's request starts at once instead of taking its
 * turn among them at every await. Each tenant has its own line.
 *
 * Its turns still take the cores another tenant's request needs, so a tenant yields: its next
 * request waits while another tenant has a request running that it started within `yieldMs`, no
 * request of its own waiting for a turn, and less time on its record than this tenant (see
 * {@link TenantUsage}); and for a second after it yielded it runs one request at a time. A trickling tenant's request then runs beside what the flood had already
 * started, not beside new work; two tenants that both flood have requests waiting and never
 * yield; a lone tenant never waits for anyone; and a request that runs long (a long poll) holds
 * the others back for `yieldMs` at most.
 *
 * A request may name a lane (the session it writes to): one admitted request per lane at a time.
 * Writes to one session run one at a time anyway (the session's write queue); admitting a second
 * one would spend one of its tenant's turns waiting behind the first, and with all its turns
 * spent that way the tenant's other sessions would wait for nothing. A lane stays taken until its request
 * leaves, past its lease too, so the next write to the session waits here, holding no turn.
 */
export class TenantGate {
  private readonly lines = new Map<string, TenantLine>();
  private readonly usage = new TenantUsage(USAGE_DECAY_MS);
  /** When the earliest hold of a yielding tenant ends: its waiters are looked at again then. */
  private wakeAt = Infinity;
  private wakeTimer: NodeJS.Timeout | undefined;

  constructor(private readonly settings: TenantGateSettings) {}

  /** Resolves once `tenant` may start this request; throws {@link TenantRequestsQueued} when its queue is full. */
  enter(tenant: string, lane?: string): Promise<Pass> {
    const line = this.lines.get(tenant) ?? {
      running: 0,
      startedSum: 0,
      youngest: 0,
      contestedUntil: 0,
      lanes: new Set<string>(),
      waiting: [],
      waitingInLane: new Map<string, number>(),
    };
    this.lines.set(tenant, line);
    if (this.mayStart(tenant, line, lane)) return Promise.resolve(this.start(tenant, line, lane));
    const refuse = (message: string) =>
      Promise.reject(new TenantRequestsQueued(message, QUEUE_FULL_RETRY_AFTER_SECONDS));
    if (line.waiting.length >= this.settings.queued)
      return refuse('too many requests of this tenant are waiting; retry shortly');
    const inLane = lane === undefined ? 0 : (line.waitingInLane.get(lane) ?? 0);
    if (lane !== undefined && inLane >= this.settings.queuedPerLane)
      return refuse('too many writes to this session are waiting; retry shortly');
    if (lane !== undefined) line.waitingInLane.set(lane, inLane + 1);
    return new Promise((resolve) => {
      line.waiting.push({ lane, admit: () => resolve(this.start(tenant, line, lane)) });
    });
  }

  /** Requests waiting and counted in flight for `tenant` (for tests and metrics). */
  load(tenant: string): { running: number; waiting: number } {
    const line = this.lines.get(tenant);
    return { running: line?.running ?? 0, waiting: line?.waiting.length ?? 0 };
  }

  private mayStart(tenant: string, line: TenantLine, lane: string | undefined): boolean {
    return (
      line.running < this.turnsOf(line) &&
      (lane === undefined || !line.lanes.has(lane)) &&
      !this.yields(tenant, line)
    );
  }

  /** A tenant that yielded within the last second runs one request at a time, else `inFlight`. */
  private turnsOf(line: TenantLine): number {
    return performance.now() < line.contestedUntil ? 1 : this.settings.inFlight;
  }

  /** Whether `tenant` yields now to another's young request (see the class); sets the wake-up if so. */
  private yields(tenant: string, line: TenantLine): boolean {
    const yieldMs = this.settings.yieldMs ?? 0;
    if (yieldMs <= 0) return false;
    const now = performance.now();
    const mine = this.timeOf(tenant, line, now);
    let until = -Infinity;
    for (const [other, theirs] of this.lines) {
      if (other === tenant || theirs.running === 0 || theirs.waiting.length > 0) continue;
      const end = theirs.youngest + yieldMs;
      if (end > now && end > until && this.timeOf(other, theirs, now) < mine) until = end;
    }
    if (until === -Infinity) return false;
    line.contestedUntil = now + CONTESTED_MS;
    this.wakeBy(until);
    return true;
  }

  /** The time `tenant` held turns lately: its record and its running requests so far. */
  private timeOf(tenant: string, line: TenantLine, now: number): number {
    return this.usage.of(tenant, now) + line.running * now - line.startedSum;
  }

  private wakeBy(at: number): void {
    if (at >= this.wakeAt) return;
    clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(() => {
      this.wakeAt = Infinity;
      this.admitAll();
    }, at - performance.now());
    this.wakeTimer.unref();
  }

  private start(tenant: string, line: TenantLine, lane: string | undefined): Pass {
    const startedAt = performance.now();
    line.running++;
    line.startedSum += startedAt;
    line.youngest = startedAt;
    if (lane !== undefined) line.lanes.add(lane);
    let counted = true;
    let left = false;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      line.running--;
      line.startedSum -= startedAt;
      const now = performance.now();
      this.usage.add(tenant, Math.min(now - startedAt, this.settings.leaseMs), now);
    };
    const lease = setTimeout(() => {
      uncount();
      this.admitAll(tenant);
    }, this.settings.leaseMs);
    lease.unref();
    return {
      leave: () => {
        if (left) return;
        left = true;
        clearTimeout(lease);
        uncount();
        if (lane !== undefined) line.lanes.delete(lane);
        this.admitAll(tenant);
      },
    };
  }

  /**
   * A turn came back: `first`'s waiters go on if they may, then every other tenant's (one that
   * yielded to `first` may start now).
   */
  private admitAll(first?: string): void {
    const line = first === undefined ? undefined : this.lines.get(first);
    if (line) this.admitNext(first!, line);
    for (const [tenant, other] of [...this.lines])
      if (tenant !== first && other.waiting.length > 0) this.admitNext(tenant, other);
  }

  /** The first waiting requests (in arrival order) whose lane is free, while the tenant may start one. */
  private admitNext(tenant: string, line: TenantLine): void {
    for (let i = 0; i < line.waiting.length && line.running < this.turnsOf(line);) {
      const waiter = line.waiting[i]!;
      if (waiter.lane !== undefined && line.lanes.has(waiter.lane)) {
        i++;
        continue;
      }
      if (this.yields(tenant, line)) break;
      line.waiting.splice(i, 1);
      if (waiter.lane !== undefined) {
        const left = line.waitingInLane.get(waiter.lane)! - 1;
        if (left > 0) line.waitingInLane.set(waiter.lane, left);
        else line.waitingInLane.delete(waiter.lane);
      }
      waiter.admit();
    }
    const idle = line.running === 0 && line.waiting.length === 0 && line.lanes.size === 0;
    // A pass whose lease ran out may leave after its line was dropped and a new one made.
    if (idle && this.lines.get(tenant) === line) this.lines.delete(tenant);
  }
}

/** The gate `TENANT_REQUESTS_IN_FLIGHT` and `TENANT_REQUESTS_QUEUED` ask for, or none (0 in flight). */
export function tenantGateOf(
  env: Pick<
    Env,
    'TENANT_REQUESTS_IN_FLIGHT' | 'TENANT_REQUESTS_QUEUED' | 'SESSION_WRITE_QUEUE_LIMIT' | 'TENANT_YIELD_MS'
  >,
) {
  if (env.TENANT_REQUESTS_IN_FLIGHT === 0) return undefined;
  return new TenantGate({
    inFlight: env.TENANT_REQUESTS_IN_FLIGHT,
    queued: env.TENANT_REQUESTS_QUEUED,
    // Writes to one session wait here rather than in the session's queue: the same bound.
    queuedPerLane: env.SESSION_WRITE_QUEUE_LIMIT,
    leaseMs: DEFAULT_TENANT_LEASE_MS,
    yieldMs: env.TENANT_YIELD_MS,
  });
}
