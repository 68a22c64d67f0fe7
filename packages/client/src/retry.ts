/** When to try a refused request again, after `Retry-After` or an exponential backoff. */

/** How a client retries refused requests. */
export interface RetryOptions {
  /** Retries after the first try (default 4); 0 turns retrying off. */
  maxRetries?: number;
  /** The first backoff (default 250 ms); each retry doubles it. */
  baseDelayMs?: number;
  /** No backoff is longer than this (default 10 s). */
  maxDelayMs?: number;
  /**
   * A `Retry-After` longer than this is not waited for: the error is thrown instead (default 60 s),
   * so a server that asks for an hour does not hang the caller.
   */
  maxRetryAfterMs?: number;
  /** Jitter source in [0, 1) (default `Math.random`; tests pass a fixed one). */
  random?: () => number;
}

/** The statuses that mean "refused, nothing written, try again later". */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** Statuses a proxy answers while the API restarts (a deploy); safe to retry on a read. */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** The API's own refusals: it answered before writing anything. */
const REFUSAL_CODES: ReadonlySet<string> = new Set(['too_many_requests', 'service_unavailable']);

/**
 * Whether a failed call may be sent again. A read (`GET`) may, on any gateway status. A write
 * may only when the API itself refused it (its error body says so: nothing was written) or when
 * it carries an `Idempotency-Key`: a proxy's 503 ("upstream reset") can come after the API
 * already wrote, and sending it again would write twice.
 */
export function mayRetry(
  method: string,
  failure: { status: number; code: string },
  idempotencyKey: boolean,
): boolean {
  if (method === 'GET' || idempotencyKey) return GATEWAY_STATUSES.has(failure.status);
  return RETRYABLE_STATUSES.has(failure.status) && REFUSAL_CODES.has(failure.code);
}

/** {@link RetryOptions} with every default filled in. */
export type RetryPolicy = Required<RetryOptions>;

/** The defaults of {@link RetryOptions}, applied under the caller's. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return {
    maxRetries: options.maxRetries ?? 4,
    baseDelayMs: options.baseDelayMs ?? 250,
    maxDelayMs: options.maxDelayMs ?? 10_000,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
    random: options.random ?? Math.random,
  };
}

/** `Retry-After` in milliseconds: delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * How long to wait before retry number `retry` (0-based), or null to give up: exponential
 * backoff with jitter (half fixed, half random, so concurrent clients spread out), never sooner
 * than the server's `Retry-After`, never longer than the policy allows.
 */
export function retryDelayMs(policy: RetryPolicy, retry: number, retryAfterMs: number | null): number | null {
  if (retry >= policy.maxRetries) return null;
  if (retryAfterMs !== null && retryAfterMs > policy.maxRetryAfterMs) return null;
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  const backoff = exponential / 2 + (exponential / 2) * policy.random();
  return Math.max(retryAfterMs ?? 0, backoff);
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
