/** The request contradicts what is stored (HTTP 409). `details` says what clashed. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * A tool call's result posted as a new message while the call is stored unfinished in
 * `messageId`: the result belongs in that message (updated in place), not in a new one.
 */
export class UnfinishedCallConflictError extends ConflictError {
  constructor(
    readonly callId: string,
    readonly messageId: string,
  ) {
    super(`tool call ${callId} is still unfinished in message ${messageId}`, { callId, messageId });
  }
}

/** A row the operation needs does not exist (HTTP 404). */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}

/**
 * A worker's attempt was superseded (another attempt took the compaction over, or it finished):
 * its writes are refused. The worker drops the job quietly.
 */
export class StaleAttemptError extends Error {
  override readonly name = 'StaleAttemptError';
  constructor(
    readonly compactionId: string,
    readonly fence: number,
    readonly currentFence: number | null,
  ) {
    super(
      `attempt with fence ${fence} of compaction ${compactionId} is stale (current fence: ${currentFence})`,
    );
  }
}

/**
 * A message a compaction would put behind its boundary changed after the summary was written
 * (a tool result PATCHed into a covered call): completing would leave that result in neither
 * the summary nor the view. Nothing was written; the attempt summarises again.
 */
export class CoveredMessageChangedError extends Error {
  override readonly name = 'CoveredMessageChangedError';
  constructor(
    readonly compactionId: string,
    readonly changedSeq: number,
  ) {
    super(`a message compaction ${compactionId} covers (seq ${changedSeq}) changed while it ran`);
  }
}

/**
 * Refused without asking the server: the database breaker is open (a probe found Postgres not
 * answering, see `DatabaseBreaker`), so the request fails now instead of waiting out a timeout.
 */
export class DatabaseBreakerOpenError extends Error {
  override readonly name = 'DatabaseBreakerOpenError';
  constructor() {
    super('the database is not answering (breaker open); retry later');
  }
}

/**
 * The error a database or driver error wraps: drizzle wraps pg's errors (whose `code` says what
 * happened) in one whose message holds the SQL and its parameters — message text, which must
 * never reach a log or a row. Unwraps `cause` chains.
 */
export function rootCause(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5; depth++) {
    const wrapped = current as { query?: unknown; cause?: unknown } | null;
    if (!wrapped || typeof wrapped !== 'object' || wrapped.cause === undefined) return current;
    if (wrapped.query === undefined && !(current instanceof AggregateError)) return current;
    current = wrapped.cause;
  }
  return current;
}

/**
 * Whether a failure says the database cannot be reached or answer now, rather than that a
 * statement is wrong: a refused or reset connection, a server shutting down or restarting
 * (SQLSTATE 57P01–57P03), a broken connection (class 08), too many connections (53300), a
 * statement cancelled by `statement_timeout` (57014), the pool's own timeouts (no free
 * connection in time, no answer in time), or the breaker refusing a checkout. Such a request can succeed later: the API answers 503
 * with Retry-After, the workers retry.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const cause = rootCause(error) as { code?: unknown; message?: unknown } | null;
  if (cause instanceof DatabaseBreakerOpenError) return true;
  const code = cause?.code;
  if (
    typeof code === 'string' &&
    /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|57P0[1-3]|57014|08|53300)/.test(
      code,
    )
  )
    return true;
  const message = typeof cause?.message === 'string' ? cause.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is closed|Query read timeout/i.test(
    message,
  );
}

/** A failure's message safe to record and log: the root cause's, without SQL parameters, bounded. */
export function safeErrorMessage(error: unknown): string {
  const cause = rootCause(error);
  const message = cause instanceof Error ? cause.message : String(cause);
  return message.length > 500 ? `${message.slice(0, 500)}…` : message;
}

/**
 * An error as logs may carry it: its class, its code (pg's SQLSTATE, a driver's errno) and the
 * safe message, never the SQL, its parameters or a stack that quotes them.
 */
export function loggableError(error: unknown): { type: string; code?: string; message: string } {
  const cause = rootCause(error) as { code?: unknown; name?: unknown } | null;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const type = error instanceof Error ? error.name : typeof error;
  return { type, ...(code ? { code } : {}), message: safeErrorMessage(error) };
}
