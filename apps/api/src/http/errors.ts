import type { ErrorCode } from '@compactor/contract';
import {
  CallOutputPurged,
  Conflict,
  EventsUnavailable,
  InvalidInput,
  NotFound,
  TenantLimitReached,
  TooManyRequests,
  UnparsableBody,
} from '@compactor/sessions';

export type { ErrorCode };

/**
 * An error the HTTP layer decides itself (a missing key, a refused dashboard request), carrying
 * its answer: the status and the contract's error code. Session refusals are the domain errors
 * of `@compactor/sessions`, each mapped onto an ApiError by {@link sessionErrorAnswer}.
 */
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

/** A body that is not JSON: the same words as Fastify's own JSON parser answers. */
const NOT_JSON_MESSAGE = "Body is not valid JSON but content-type is set to 'application/json'";

/**
 * A refusal of `@compactor/sessions` as the API answers it (status, contract code, details),
 * or null for any other error. Retry-After comes from `retryAfterSeconds` in the details.
 */
export function sessionErrorAnswer(error: unknown): ApiError | null {
  if (error instanceof NotFound) return new ApiError(404, 'not_found', error.message);
  if (error instanceof InvalidInput) {
    const details = error.issues === undefined ? undefined : { issues: error.issues };
    return new ApiError(400, 'validation_error', error.message, details);
  }
  if (error instanceof UnparsableBody) return new ApiError(400, 'validation_error', NOT_JSON_MESSAGE);
  if (error instanceof Conflict) return new ApiError(409, 'conflict', error.message);
  if (error instanceof TenantLimitReached) {
    const { limit, retryAfterSeconds } = error;
    return new ApiError(429, 'too_many_requests', error.message, { limit, retryAfterSeconds });
  }
  if (error instanceof TooManyRequests) {
    const { retryAfterSeconds } = error;
    return new ApiError(429, 'too_many_requests', error.message, { retryAfterSeconds });
  }
  if (error instanceof CallOutputPurged) {
    return new ApiError(410, 'gone', error.message, { purgedAt: error.purgedAt.toISOString() });
  }
  if (error instanceof EventsUnavailable) return new ApiError(503, 'service_unavailable', error.message);
  return null;
}
