/**
 * Compactor's refusals on the drop-in routes, in the provider's own error shape (OpenAI's
 * `{ error: { message, type, code } }`, Anthropic's `{ type: "error", error: { type, message } }`):
 * the agent's SDK reads them as it reads the provider's, so its own retry rules (429, 5xx with
 * Retry-After, Anthropic's 529) apply unchanged.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DropInInputError } from '@compactor/core';
import { isDatabaseUnavailable, loggableError } from '@compactor/db';
import { anthropicError, anthropicErrorTypeFor, DropInError, openAIError } from '@compactor/gateway';
import { ApiError, sessionErrorAnswer } from './errors';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from './error-handler';

/** Fastify's own refusals of a body (not JSON, too large, another media type). */
const BODY_ERRORS: Record<string, number> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 413,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 415,
  FST_ERR_CTP_EMPTY_JSON_BODY: 400,
  FST_ERR_CTP_INVALID_JSON_BODY: 400,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 400,
};

/** A refusal of ours: its status, a code (OpenAI's `code`; Anthropic has none) and words. */
export interface DropInRefusal {
  status: number;
  code: string;
  message: string;
  retryAfterSeconds?: number | undefined;
}

function refusalOf(error: FastifyError): DropInRefusal | null {
  if (error instanceof DropInInputError)
    return { status: 400, code: 'invalid_request', message: `invalid request: ${error.message}` };
  if (error instanceof DropInError) return { status: error.status, code: error.code, message: error.message };
  const answer = error instanceof ApiError ? error : sessionErrorAnswer(error);
  if (answer) {
    const named = (answer.details as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
    return {
      status: answer.status,
      code: answer.status === 401 ? 'invalid_api_key' : answer.code,
      message: answer.message,
      retryAfterSeconds: typeof named === 'number' ? named : undefined,
    };
  }
  const bodyStatus = error.code ? BODY_ERRORS[error.code] : undefined;
  if (bodyStatus !== undefined)
    return { status: bodyStatus, code: 'invalid_request', message: error.message };
  if (error instanceof SyntaxError) return { status: 400, code: 'invalid_request', message: error.message };
  if (isDatabaseUnavailable(error))
    return {
      status: 503,
      code: 'service_unavailable',
      message: 'the database is unavailable; retry later',
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
    };
  return null;
}

/** A provider's error body for a refusal, or for our own fault (`refusal` null). */
type ErrorBody = (refusal: DropInRefusal | null, requestId: string) => unknown;

/**
 * The error handler of a drop-in route: every refusal in the provider's shape (`body`); our own
 * faults a logged 500 that names the request, never the error (it can quote the client's messages).
 */
function dropInErrorHandler(body: ErrorBody) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const refusal = refusalOf(error);
    if (refusal === null) {
      request.log.error({ err: loggableError(error) }, 'drop-in request failed');
      return reply.code(500).send(body(null, request.id));
    }
    if (refusal.retryAfterSeconds !== undefined)
      void reply.header('retry-after', String(refusal.retryAfterSeconds));
    return reply.code(refusal.status).send(body(refusal, request.id));
  };
}

const internalError = (requestId: string) => `internal error; see the server log for request ${requestId}`;

/** OpenAI's `type` for a status (what its own API answers). */
function openAITypeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** `POST /v1/chat/completions`'s error handler: OpenAI's shape. */
export const openAIErrorHandler = dropInErrorHandler((refusal, requestId) =>
  refusal === null
    ? openAIError(internalError(requestId), 'server_error', 'internal_error')
    : openAIError(refusal.message, openAITypeFor(refusal.status), refusal.code),
);

/** `POST /v1/messages`'s error handler: Anthropic's shape. */
export const anthropicErrorHandler = dropInErrorHandler((refusal, requestId) =>
  refusal === null
    ? anthropicError('api_error', internalError(requestId))
    : anthropicError(anthropicErrorTypeFor(refusal.status), refusal.message),
);
