import { z } from 'zod';

/** Ids clients choose (sessions, messages): printable, no whitespace, bounded. */
export const ClientId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'ids are printable ASCII without spaces');

export const JsonObject = z.record(z.string(), z.unknown());

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
  .meta({ id: 'Error' });

/** The error responses every authenticated route can give, for the OpenAPI document. */
export const commonErrors = {
  400: ErrorBody,
  401: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  413: ErrorBody,
};

export const SessionParams = z.object({ id: ClientId });
