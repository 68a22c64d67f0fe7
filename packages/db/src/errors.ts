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
