import type { ErrorCode } from '@compactor/contract';

/** Stable error codes of the API contract (the contract's list). */
export type { ErrorCode };

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
