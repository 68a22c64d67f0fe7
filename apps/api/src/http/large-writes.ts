import { TooManyRequests } from '@compactor/sessions';
import { z } from 'zod';
import { LARGE_BODY_BYTES, UnparsedBody } from './unparsed-body';

/** How large appends are admitted in one API process (see {@link LargeWrites}). */
export interface LargeWriteSettings {
  /** Bodies of at least this many bytes are large writes. */
  bytes: number;
  /** Large writes doing their work at once in this process. */
  inFlight: number;
  /** Large writes of one tenant doing their work at once in this process. */
  perTenant: number;
  /** Large writes waiting for their turn in this process; the next one is refused. */
  queued: number;
  /** Large writes of one tenant waiting; the next one is refused, so one tenant cannot fill the queue. */
  queuedPerTenant: number;
  /** How long a large write waits for its turn before it is refused. */
  waitMs: number;
}

/**
 * One at a time per process: a 31 MiB append costs Postgres ~1–1.5 s of CPU (parsing the jsonb,
 * extracting the text, compressing and TOASTing it, its WAL) and the API's worker thread as much
 * again; on a 2-core machine two or more at once leave another tenant's reads waiting for a core.
 * A waiting body is held in memory (its bytes only), so the queue is short: with the one in
 * flight, at most four bodies, as many as the sessions package holds at once.
 */
export const LARGE_WRITE_DEFAULTS: LargeWriteSettings = {
  bytes: LARGE_BODY_BYTES,
  inFlight: 1,
  perTenant: 1,
  queued: 3,
  queuedPerTenant: 2,
  waitMs: 10_000,
};

/** Seconds a refused large write is told to wait: about what one takes to prepare and write. */
export const LARGE_WRITE_RETRY_AFTER_SECONDS = 2;

/** No turn for a large write within its wait, or its queue is full: nothing was read or written. */
export class LargeWritesBusy extends TooManyRequests {}

const count = (max: number) => z.coerce.number().int().min(0).max(max);

/**
 * The settings from the environment (`LARGE_WRITES_IN_FLIGHT`, `LARGE_WRITES_PER_TENANT`,
 * `LARGE_WRITES_QUEUED`, `LARGE_WRITES_TENANT_QUEUED`, `LARGE_WRITE_WAIT_MS`), each left out
 * its default. `LARGE_WRITES_IN_FLIGHT=0` turns the limit off (every large write starts at once).
 */
export function largeWriteSettingsOf(env: Record<string, string | undefined>): LargeWriteSettings {
  const d = LARGE_WRITE_DEFAULTS;
  const parsed = z
    .object({
      LARGE_WRITES_IN_FLIGHT: count(1_000).default(d.inFlight),
      LARGE_WRITES_PER_TENANT: count(1_000).min(1).default(d.perTenant),
      LARGE_WRITES_QUEUED: count(1_000).default(d.queued),
      LARGE_WRITES_TENANT_QUEUED: count(1_000).default(d.queuedPerTenant),
      LARGE_WRITE_WAIT_MS: count(600_000).default(d.waitMs),
    })
    .parse(env);
  return {
    bytes: d.bytes,
    inFlight: parsed.LARGE_WRITES_IN_FLIGHT,
    perTenant: parsed.LARGE_WRITES_PER_TENANT,
    queued: parsed.LARGE_WRITES_QUEUED,
    queuedPerTenant: parsed.LARGE_WRITES_TENANT_QUEUED,
    waitMs: parsed.LARGE_WRITE_WAIT_MS,
  };
}

interface Waiter {
  tenant: string;
  admit: () => void;
}

/**
 * Admission of large appends in one process: at most `inFlight` at once, `perTenant` of one
 * tenant; the others wait in arrival order (the first whose tenant has room goes next), at most
 * `queued` of them (`queuedPerTenant` of one tenant) and `waitMs` each, then are refused with
 * {@link LargeWritesBusy} before anything is parsed or written. Small bodies pass at once.
 */
export class LargeWrites {
  private running = 0;
  private readonly runningOf = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(private readonly settings: LargeWriteSettings = LARGE_WRITE_DEFAULTS) {}

  /**
   * Resolves with the release of its turn (call it once the write is answered), or rejects.
   * `bytes`: the body's size (a large body's bytes as read, else its `content-length`).
   */
  enter(tenant: string, bytes: number): Promise<() => void> {
    const { settings } = this;
    if (bytes < settings.bytes || settings.inFlight === 0) return Promise.resolve(() => undefined);
    if (this.mayStart(tenant)) return Promise.resolve(this.start(tenant));
    const refuse = (message: string) =>
      Promise.reject(new LargeWritesBusy(message, LARGE_WRITE_RETRY_AFTER_SECONDS));
    if (this.waiting.length >= settings.queued)
      return refuse('too many large appends are waiting on this server; retry shortly');
    if (this.waiting.filter((w) => w.tenant === tenant).length >= settings.queuedPerTenant)
      return refuse("too many of this tenant's large appends are waiting; retry shortly");
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        tenant,
        admit: () => {
          clearTimeout(timer);
          resolve(this.start(tenant));
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(
          new LargeWritesBusy(
            'no turn for this large append within its wait; retry shortly',
            LARGE_WRITE_RETRY_AFTER_SECONDS,
          ),
        );
      }, settings.waitMs);
      this.waiting.push(waiter);
    });
  }

  /** Large writes running and waiting (for tests and metrics). */
  load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  private mayStart(tenant: string): boolean {
    return (
      this.running < this.settings.inFlight && (this.runningOf.get(tenant) ?? 0) < this.settings.perTenant
    );
  }

  private start(tenant: string): () => void {
    this.running++;
    this.runningOf.set(tenant, (this.runningOf.get(tenant) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const left = this.runningOf.get(tenant)! - 1;
      if (left > 0) this.runningOf.set(tenant, left);
      else this.runningOf.delete(tenant);
      this.admitNext();
    };
  }

  /** The first waiter (in arrival order) whose tenant has room, while the process has room. */
  private admitNext(): void {
    for (let i = 0; i < this.waiting.length && this.running < this.settings.inFlight;) {
      const waiter = this.waiting[i]!;
      if (!this.mayStart(waiter.tenant)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      waiter.admit();
    }
  }
}

/** A request's body size: a large body's bytes as read, else its `content-length` (0 without one). */
export function bodyBytes(request: {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}): number {
  if (request.body instanceof UnparsedBody)
    return request.body.segments.reduce((sum, segment) => sum + segment.length, 0);
  return Number(request.headers['content-length']) || 0;
}
