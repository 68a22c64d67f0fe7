import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { PolicyError } from '@compactor/core';
import {
  ConflictError,
  DatabaseBreakerOpenError,
  NotFoundError,
  UnfinishedCallConflictError,
  isDatabaseUnavailable,
  loggableError,
  rootCause,
} from '@compactor/db';
import { InvalidInput } from '@compactor/sessions';
import { ApiError, sessionErrorAnswer, type ErrorCode } from './errors';
import { drainRequestBody, refuseOversizedBeforeContinue } from './oversized-bodies';

function body(code: ErrorCode, message: string, details?: unknown) {
  return { error: { code, message, ...(details === undefined ? {} : { details }) } };
}

/**
 * How long a client should wait before retrying a request a dependency (Postgres, Redis) could
 * not serve: every 503 carries it unless the error names its own.
 */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** Maps Fastify's own error codes for bad requests onto the contract's codes. */
const FASTIFY_CLIENT_ERRORS: Record<string, [number, ErrorCode]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'payload_too_large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported_media_type'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'validation_error'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'validation_error'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'validation_error'],
};

/**
 * Fastify's own answers to a URL it cannot route (bad percent-encoding, a parameter longer than
 * the router takes), in the contract's shape and without echoing the URL back.
 */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply
      .code(414)
      .send(body('validation_error', 'a path parameter is longer than any id can be (200 characters)'));
    return;
  }
  void reply.code(400).send(body('validation_error', 'the URL is not valid (bad percent-encoding)'));
}

/**
 * What Node's HTTP parser refuses before Fastify sees a request (headers too large, a timeout,
 * malformed HTTP), answered in the contract's shape; a reset connection gets nothing.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return;
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'the request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'the request took too long to arrive']
        : [400, 'the request is not valid HTTP'];
  const payload = JSON.stringify(body('validation_error', message));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
}

/** The 413's message: the limit in force, so the client knows what to split its write into. */
function tooLargeMessage(bodyLimit: number): string {
  return `the request body is larger than this server accepts (${bodyLimit} bytes): split the batch into smaller appends`;
}

/**
 * Every error leaves as `{ error: { code, message, details? } }`. Bad input is always a 4xx;
 * only our own faults are 500s, and their details stay in the log.
 */
export function installErrorHandling(app: FastifyInstance): void {
  const bodyLimit = app.initialConfig.bodyLimit ?? 1024 * 1024;
  refuseOversizedBeforeContinue(app.server, bodyLimit, (limit) =>
    JSON.stringify(body('payload_too_large', tooLargeMessage(limit))),
  );
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      const invalid = InvalidInput.atPointers(error.validationContext ?? 'body', error.validation);
      return reply.code(400).send(body('validation_error', invalid.message, { issues: invalid.issues }));
    }
    const answer = error instanceof ApiError ? error : sessionErrorAnswer(error);
    if (answer) {
      const named = (answer.details as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
      const retryAfter =
        typeof named === 'number' ? named : answer.status === 503 ? UNAVAILABLE_RETRY_AFTER_SECONDS : null;
      if (retryAfter !== null) void reply.header('retry-after', String(retryAfter));
      return reply.code(answer.status).send(body(answer.code, answer.message, answer.details));
    }
    if (error instanceof PolicyError) return reply.code(400).send(body('validation_error', error.message));
    if (error instanceof UnfinishedCallConflictError) {
      const patch = `PATCH /v1/sessions/:id/messages/${error.messageId}`;
      return reply
        .code(409)
        .send(body('conflict', `${error.message}: report its result with ${patch}`, error.details));
    }
    if (error instanceof ConflictError)
      return reply.code(409).send(body('conflict', error.message, error.details));
    if (error instanceof NotFoundError) return reply.code(404).send(body('not_found', error.message));
    if (isDatabaseUnavailable(error)) {
      // The client retries 503s. Refusals of an open breaker are not logged one by one: the
      // breaker logs when it opens and closes.
      if (!(rootCause(error) instanceof DatabaseBreakerOpenError))
        request.log.warn({ err: loggableError(error) }, 'database unavailable');
      return reply
        .code(503)
        .header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS))
        .send(body('service_unavailable', 'the database is unavailable; retry later'));
    }
    const known = error.code ? FASTIFY_CLIENT_ERRORS[error.code] : undefined;
    // The client may still be sending: the answer waits until its body is read (oversized-bodies.ts).
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return drainRequestBody(request.raw).then(() =>
        reply
          .code(413)
          .send(body('payload_too_large', tooLargeMessage(request.routeOptions.bodyLimit ?? bodyLimit))),
      );
    if (known) return reply.code(known[0]).send(body(known[1], error.message));
    if (
      error instanceof SyntaxError ||
      (error.statusCode && error.statusCode >= 400 && error.statusCode < 500)
    ) {
      return reply.code(error.statusCode ?? 400).send(body('validation_error', error.message));
    }
    // Never the error object itself: a database error carries the statement and its parameters,
    // i.e. the client's message text, and its stack quotes them.
    if (isResponseSerializationError(error)) {
      request.log.error(
        {
          err: loggableError(error),
          issues: error.cause.issues.map((i) => ({ path: i.path, code: i.code })),
        },
        'response did not match its schema',
      );
    } else {
      request.log.error({ err: loggableError(error) }, 'request failed');
    }
    return reply.code(500).send(
      body('internal_error', 'internal error; see the server log for the request id', {
        requestId: request.id,
      }),
    );
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(body('not_found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );
}
