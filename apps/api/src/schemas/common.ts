import { z } from 'zod';

/** Ids clients choose (sessions, messages): printable, no whitespace, bounded. */
export const ClientId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'ids are printable ASCII without spaces');

/** Largest value of a Postgres `integer` column: larger counts are a 400, not a failed insert. */
export const INT4_MAX = 2_147_483_647;

/** A non-negative count that fits an `integer` column. */
export const Count = z.number().int().min(0).max(INT4_MAX);

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why a string cannot be stored as sent, or null: Postgres `text` and `jsonb` reject U+0000,
 * and a lone UTF-16 surrogate is not Unicode (it would be stored as U+FFFD, silently changed).
 */
export function textProblem(value: string): string | null {
  if (value.includes('\u0000')) return 'contains a NUL character (U+0000), which cannot be stored';
  if (LONE_SURROGATE.test(value)) return 'contains a lone UTF-16 surrogate (not valid Unicode text)';
  return null;
}

/** A string that Postgres stores exactly as sent. */
export const SafeText = z.string().superRefine((value, ctx) => {
  const problem = textProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** Nesting beyond this in a free-form JSON value (metadata, tool input) is refused. */
export const MAX_JSON_DEPTH = 64;

/** Why a free-form JSON value cannot be stored, with where, or null. Never recurses deeper than the limit. */
export function jsonProblem(
  value: unknown,
  depth = 0,
): { path: (string | number)[]; message: string } | null {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem ? { path: [], message: problem } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  if (depth >= MAX_JSON_DEPTH) return { path: [], message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : Object.entries(value);
  for (const [key, item] of entries) {
    if (typeof key === 'string') {
      const problem = textProblem(key);
      if (problem) return { path: [key], message: `key ${problem}` };
    }
    const inner = jsonProblem(item, depth + 1);
    if (inner) return { path: [key, ...inner.path], message: inner.message };
  }
  return null;
}

/** Adds {@link jsonProblem}'s issue to a schema's input (a refinement, so it keeps its JSON schema). */
export function storable<T>(value: T, ctx: z.RefinementCtx): void {
  const problem = jsonProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
}

/** Any JSON value that Postgres `jsonb` stores as sent, nested at most {@link MAX_JSON_DEPTH} deep. */
export const SafeJson = z.unknown().superRefine(storable);

export const JsonObject = z.record(z.string(), z.unknown());

/** A JSON object in a request: storable as sent (see {@link jsonProblem}). */
export const JsonObjectIn = JsonObject.superRefine(storable);

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
