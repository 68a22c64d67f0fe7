/** Stable error codes of the API contract. */
export type ErrorCode =
  | 'validation_error'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unauthorized'
  | 'unsupported_media_type'
  | 'service_unavailable'
  | 'internal_error';

/** An error the API answers with its own status and code (thrown by handlers). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);
export const invalid = (message: string, details?: unknown) =>
  new ApiError(400, 'validation_error', message, details);
