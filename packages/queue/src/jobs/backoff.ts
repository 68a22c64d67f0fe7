/**
 * Retry delay for attempt `attemptsMade` (1 after the first failure): exponential from
 * `baseMs` with equal jitter (half the ceiling plus a random share of the other half, so
 * retries of jobs that failed together spread out), never below what the provider asked for with `Retry-After`, and capped.
 */
export function retryDelayMs(
  attemptsMade: number,
  baseMs: number,
  error: unknown,
  random: () => number,
  capMs = 5 * 60_000,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, attemptsMade - 1));
  const jittered = Math.round(ceiling / 2 + random() * (ceiling / 2));
  const asked = retryAfterOf(error);
  return Math.min(capMs, Math.max(jittered, asked ?? 0));
}

/** The provider's `Retry-After`, when the error carries one (the LLM client's classified errors do). */
export function retryAfterOf(error: unknown): number | null {
  const value = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}
