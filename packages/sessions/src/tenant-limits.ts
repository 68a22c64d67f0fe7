import { ActiveCompactionLimitError, type CompactionLimits } from '@compactor/workflow';
import { TooManyRequests } from './errors';
import { TokenBuckets } from './token-buckets';

/** The per-tenant caps, as metrics label them. */
export type TenantLimitName = 'event_streams' | 'active_compactions' | 'session_create_rate';

/** What one tenant may use. Each is 0 for "no limit". */
export interface TenantLimitSettings {
  /**
   * Event streams one tenant may hold open in this process (each holds a socket and a
   * subscription). Per process: N replicas allow N times as many.
   * @defaultValue 100
   */
  maxEventStreams: number;
  /**
   * Compactions one tenant may have pending or running, counted in Postgres (over every replica
   * and the workers' follow-ups). Manual and overflow requests past it are refused; an auto
   * compaction past it waits its turn (deferred in Postgres, started when the tenant has room).
   * @defaultValue 20
   */
  maxActiveCompactions: number;
  /**
   * Sessions one tenant may create per minute in this process: a token bucket holding a
   * minute's worth, refilled evenly. Per process: N replicas allow N times as many.
   * @defaultValue 600
   */
  sessionCreatesPerMinute: number;
}

/** Generous enough that normal use never meets them: they stop a runaway client. */
export const TENANT_LIMIT_DEFAULTS: Readonly<TenantLimitSettings> = {
  maxEventStreams: 100,
  maxActiveCompactions: 20,
  sessionCreatesPerMinute: 600,
};

/** No cap at all (tests that drive more than a tenant normally would). */
export const NO_TENANT_LIMITS: Readonly<TenantLimitSettings> = {
  maxEventStreams: 0,
  maxActiveCompactions: 0,
  sessionCreatesPerMinute: 0,
};

/** What the limits report (the app binds it to its metrics). */
export interface TenantLimitObserver {
  /** A request was refused: the tenant was at `limit`. */
  rejected?(limit: TenantLimitName): void;
  /** An auto compaction was deferred (or was already waiting): the tenant was at its cap. */
  autoCompactionDeferred?(): void;
  /** The event streams open in this process, over all tenants, after each change. */
  eventStreams?(open: number): void;
  /** A finished turn's prune waited, for `reason` (the append path's other report, next to deferrals). */
  pruneSkipped?(reason: 'cache_warm'): void;
}

/** When to try again: a stream place frees when a client leaves, a compaction ends in seconds. */
const EVENT_STREAM_RETRY_AFTER_SECONDS = 5;
const ACTIVE_COMPACTION_RETRY_AFTER_SECONDS = 10;

/** A request past one of its tenant's caps, `limit`; `retryAfterSeconds` says when to try again. */
export class TenantLimitReached extends TooManyRequests {
  constructor(
    readonly limit: TenantLimitName,
    message: string,
    retryAfterSeconds: number,
  ) {
    super(message, retryAfterSeconds);
  }
}

/**
 * The per-tenant caps of one API process: the event streams it holds per tenant and the
 * session-creation buckets (in memory), and the cap on active compactions that
 * `@compactor/workflow` applies in Postgres. Tenants are not labelled in what it reports: they
 * are unbounded.
 */
export class TenantLimits {
  readonly settings: Readonly<TenantLimitSettings>;
  private readonly streams = new Map<string, number>();
  private openStreams = 0;
  private readonly sessionCreates: TokenBuckets | null;

  constructor(
    settings: Partial<TenantLimitSettings> = {},
    private readonly observer: TenantLimitObserver = {},
    now: () => number = Date.now,
  ) {
    this.settings = { ...TENANT_LIMIT_DEFAULTS, ...settings };
    const perMinute = this.settings.sessionCreatesPerMinute;
    this.sessionCreates =
      perMinute > 0 ? new TokenBuckets({ capacity: perMinute, refillMs: 60_000 / perMinute, now }) : null;
  }

  /**
   * Takes one of the tenant's event-stream places, or throws a {@link TenantLimitReached}.
   * Returns the place's release; calling it again does nothing, so every way a stream can end
   * may call it.
   */
  openEventStream(tenantId: string): () => void {
    const open = this.streams.get(tenantId) ?? 0;
    const max = this.settings.maxEventStreams;
    if (max > 0 && open >= max) {
      throw this.refuse(
        'event_streams',
        `this tenant already has ${max} event streams open (its limit); close one or retry later`,
        EVENT_STREAM_RETRY_AFTER_SECONDS,
      );
    }
    this.streams.set(tenantId, open + 1);
    this.countStreams(1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.streams.get(tenantId) ?? 1) - 1;
      if (left > 0) this.streams.set(tenantId, left);
      else this.streams.delete(tenantId);
      this.countStreams(-1);
    };
  }

  /** The event streams the tenant holds open in this process. */
  eventStreamsOf(tenantId: string): number {
    return this.streams.get(tenantId) ?? 0;
  }

  /** The cap `@compactor/workflow` applies when a compaction is requested. */
  get compactions(): CompactionLimits {
    return { maxActivePerTenant: this.settings.maxActiveCompactions };
  }

  /** Starts a compaction a client asked for (manual, overflow): past the tenant's cap, {@link TenantLimitReached}. */
  async requestedCompaction<T>(start: (limits: CompactionLimits) => Promise<T>): Promise<T> {
    try {
      return await start(this.compactions);
    } catch (error) {
      if (!(error instanceof ActiveCompactionLimitError)) throw error;
      throw this.refuse(
        'active_compactions',
        `this tenant already has ${error.limit} compactions pending or running (its limit); retry later`,
        ACTIVE_COMPACTION_RETRY_AFTER_SECONDS,
      );
    }
  }

  /**
   * Starts an auto compaction: past the tenant's cap, `null` (not started now; nothing failed):
   * it waits its turn, recorded in Postgres, and a worker starts it when one of the tenant's
   * compactions ends (the reconciler, should that worker die).
   */
  async autoCompaction<T>(start: (limits: CompactionLimits) => Promise<T>): Promise<T | null> {
    try {
      return await start({ ...this.compactions, deferAtCap: true });
    } catch (error) {
      if (!(error instanceof ActiveCompactionLimitError)) throw error;
      this.observer.autoCompactionDeferred?.();
      return null;
    }
  }

  /** Reports that a finished turn's prune waited (metrics). */
  pruneSkipped(reason: 'cache_warm'): void {
    this.observer.pruneSkipped?.(reason);
  }

  /**
   * Runs `create` under the tenant's session-creation rate. A request that creates nothing (the
   * same session again, a refused body) gives its token back, and one that names a session that
   * `exists` is never refused: only new sessions spend the rate.
   */
  async createSession<T extends { created: boolean }>(
    tenantId: string,
    create: () => Promise<T>,
    exists: () => Promise<boolean>,
  ): Promise<T> {
    const buckets = this.sessionCreates;
    if (!buckets) return create();
    const wait = buckets.take(tenantId);
    if (wait > 0) {
      if (await exists()) return create();
      throw this.refuse(
        'session_create_rate',
        `this tenant is creating sessions faster than its limit (${this.settings.sessionCreatesPerMinute} a minute); retry later`,
        wait,
      );
    }
    let created = false;
    try {
      const result = await create();
      created = result.created;
      return result;
    } finally {
      if (!created) buckets.refund(tenantId);
    }
  }

  private refuse(limit: TenantLimitName, message: string, retryAfterSeconds: number): TenantLimitReached {
    this.observer.rejected?.(limit);
    return new TenantLimitReached(limit, message, retryAfterSeconds);
  }

  private countStreams(change: number): void {
    this.openStreams += change;
    this.observer.eventStreams?.(this.openStreams);
  }
}
