/**
 * Compactor's refusals on the Anthropic drop-in route, in Anthropic's error shape
 * (`{ type: "error", error: { type, message } }`): the agent's SDK reads them as it reads the
 * provider's, so its own retry rules (429, 5xx, 529) apply unchanged.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DropInInputError } from '@compactor/core';
import { isDatabaseUnavailable, loggableError } from '@compactor/db';
import { anthropicError, anthropicErrorTypeFor as typeFor, DropInError } from '@compactor/gateway';
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

interface AnthropicRefusal {
  status: number;
  message: string;
  retryAfterSeconds?: number | undefined;
}

function refusalOf(error: FastifyError): AnthropicRefusal | null {
  if (error instanceof DropInInputError) return { status: 400, message: `invalid request: ${error.message}` };
  if (error instanceof DropInError) return { status: error.status, message: error.message };
  const answer = error instanceof ApiError ? error : sessionErrorAnswer(error);
  if (answer) {
    const named = (answer.details as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
    return {
      status: answer.status,
      message: answer.message,
      retryAfterSeconds: typeof named === 'number' ? named : undefined,
    };
  }
  const bodyStatus = error.code ? BODY_ERRORS[error.code] : undefined;
  if (bodyStatus !== undefined) return { status: bodyStatus, message: error.message };
  if (error instanceof SyntaxError) return { status: 400, message: error.message };
  if (isDatabaseUnavailable(error))
    return {
      status: 503,
      message: 'the database is unavailable; retry later',
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
    };
  return null;
}

/** The Anthropic drop-in route's error handler: every refusal in Anthropic's shape; our own faults a logged 500. */
export function anthropicErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const refusal = refusalOf(error);
  if (refusal === null) {
    // Never the error object itself: it can quote the client's messages.
    request.log.error({ err: loggableError(error) }, 'drop-in request failed');
    return reply
      .code(500)
      .send(anthropicError('api_error', `internal error; see the server log for request ${request.id}`));
  }
  if (refusal.retryAfterSeconds !== undefined)
    void reply.header('retry-after', String(refusal.retryAfterSeconds));
  return reply.code(refusal.status).send(anthropicError(typeFor(refusal.status), refusal.message));
}
