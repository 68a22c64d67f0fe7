import type { ErrorCode } from '@compactor/contract';

/**
 * An error a session operation fails with, carrying its answer: the HTTP status and the
 * contract's error code (the API's error handler sends it as it is). Refusals are part of what
 * a session does (a full queue is a 429, a model too small for a request a 400), so they are
 * decided here, not by the transport.
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

export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);
export const invalid = (message: string, details?: unknown) =>
  new ApiError(400, 'validation_error', message, details);

/**
 * The 400 for what a schema refused, naming each field as `body.messages.0.role` (the request
 * part, then the path). `instancePath` is the JSON pointer Fastify's validators report.
 */
export function invalidRequest(
  context: string,
  issues: Array<{ instancePath: string; message?: string | undefined }>,
): ApiError {
  const named = issues.map((v) => ({
    path: `${context}${v.instancePath.replace(/\//g, '.')}`,
    message: v.message,
  }));
  const summary = named.map((i) => `${i.path}: ${i.message}`).join('; ');
  return new ApiError(400, 'validation_error', `invalid request: ${summary}`, { issues: named });
}

/** A body that is not JSON: the same 400 and words as Fastify's own JSON parser answers. */
export const invalidJsonBody = () =>
  new ApiError(
    400,
    'validation_error',
    "Body is not valid JSON but content-type is set to 'application/json'",
  );
