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
