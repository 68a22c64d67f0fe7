import { z } from 'zod';

/** Every `error.code` the API answers with, with the status it comes with (see {@link ERROR_STATUS}). */
export const ERROR_CODES = [
  'validation_error',
  'unauthorized',
  'not_found',
  'conflict',
  'gone',
  'payload_too_large',
  'unsupported_media_type',
  'too_many_requests',
  'service_unavailable',
  'internal_error',
] as const;

/** One of {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** What each code means and its HTTP status (generated docs and clients read this table). */
export const ERROR_STATUS: Readonly<Record<ErrorCode, { status: number; meaning: string }>> = {
  validation_error: {
    status: 400,
    meaning: 'bad input (the failing paths are in `details.issues`); also 414 for an over-long path id',
  },
  unauthorized: { status: 401, meaning: 'missing or unknown bearer key' },
  not_found: { status: 404, meaning: "no such session or compaction (also another tenant's)" },
  conflict: {
    status: 409,
    meaning:
      'the id or Idempotency-Key was used with another body, or the write contradicts what is stored (`details` says what)',
  },
  gone: {
    status: 410,
    meaning: 'what was asked for existed but retention has purged it (a recalled tool output)',
  },
  payload_too_large: { status: 413, meaning: 'the body is larger than `BODY_LIMIT_BYTES`' },
  unsupported_media_type: { status: 415, meaning: 'a body that is not `application/json`' },
  too_many_requests: {
    status: 429,
    meaning:
      'too many writes waiting for one session or large appends in progress on the server, or the tenant is ' +
      'at one of its caps (`details.limit`: ' +
      '`event_streams`, `active_compactions`, `session_create_rate`); retry after `Retry-After` seconds',
  },
  service_unavailable: {
    status: 503,
    meaning:
      'a dependency (Postgres, or Redis for the event stream) is unavailable; retry after `Retry-After`. A write ' +
      'answered 503 because Postgres stopped answering mid-statement may still have committed once it came back: ' +
      'send it again as it was (appends with the same message ids, compaction requests with the same ' +
      '`Idempotency-Key`) and it is stored once; the clients assign message ids for that',
  },
  internal_error: { status: 500, meaning: 'a bug: bad input never yields a 5xx' },
};

/** `{ error: { code, message, details? } }`: the body of every non-2xx answer. */
export const ErrorBody = z
  .object({
    error: z.object({
      code: z
        .string()
        .describe('validation_error | not_found | conflict | payload_too_large | unauthorized | …'),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  })
  .meta({
    id: 'Error',
    examples: [
      {
        error: {
          code: 'validation_error',
          message: 'invalid request: body.model.id: Required',
          details: { issues: [{ path: 'body.model.id', message: 'Required' }] },
        },
      },
    ],
  });

/** The error body as a client receives it. */
export type ErrorResponse = z.output<typeof ErrorBody>;
