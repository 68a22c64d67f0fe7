import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { PolicyError } from '@compactor/core';
import { ConflictError, NotFoundError } from '@compactor/db';
import { ApiError, type ErrorCode } from './errors';

function body(code: ErrorCode, message: string, details?: unknown) {
  return { error: { code, message, ...(details === undefined ? {} : { details }) } };
}

/** Maps Fastify's own error codes for bad requests onto the contract's codes. */
const FASTIFY_CLIENT_ERRORS: Record<string, [number, ErrorCode]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'payload_too_large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported_media_type'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'validation_error'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'validation_error'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'validation_error'],
};

/**
 * Every error leaves as `{ error: { code, message, details? } }`. Bad input is always a 4xx;
 * only our own faults are 500s, and their details stay in the log.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      const issues = error.validation.map((v) => ({
        path: `${error.validationContext ?? 'body'}${v.instancePath.replace(/\//g, '.')}`,
        message: v.message,
      }));
      const summary = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
      return reply.code(400).send(body('validation_error', `invalid request: ${summary}`, { issues }));
    }
    if (error instanceof ApiError)
      return reply.code(error.status).send(body(error.code, error.message, error.details));
    if (error instanceof PolicyError) return reply.code(400).send(body('validation_error', error.message));
    if (error instanceof ConflictError)
      return reply.code(409).send(body('conflict', error.message, error.details));
    if (error instanceof NotFoundError) return reply.code(404).send(body('not_found', error.message));
    const known = error.code ? FASTIFY_CLIENT_ERRORS[error.code] : undefined;
    if (known) return reply.code(known[0]).send(body(known[1], error.message));
    if (
      error instanceof SyntaxError ||
      (error.statusCode && error.statusCode >= 400 && error.statusCode < 500)
    ) {
      return reply.code(error.statusCode ?? 400).send(body('validation_error', error.message));
    }
    if (isResponseSerializationError(error)) {
      request.log.error({ err: error, issues: error.cause.issues }, 'response did not match its schema');
    } else {
      request.log.error({ err: error }, 'request failed');
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
