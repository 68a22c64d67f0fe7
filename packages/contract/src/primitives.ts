/**
 * The value rules every request shares: what Postgres can store exactly as sent. Bad input is a
 * 400 naming the field, never a failed insert (a 500) or a silently changed value.
 *
 * Platform-neutral (no `Buffer`, no `node:*`): clients in any runtime validate with the same rules.
 */
import { z } from 'zod';

/** The longest id a client may choose; the router accepts it in a path even percent-encoded. */
export const MAX_CLIENT_ID_LENGTH = 200;

/**
 * Ids clients choose (sessions, messages): printable, no whitespace, bounded, and never `.` or
 * `..`: URL-normalising clients (WHATWG URL, fetch, browsers, most proxies) resolve those path
 * segments, percent-encoded or not, so such a session or message could be created but never
 * addressed. Every other id survives `encodeURIComponent` as a path segment.
 */
export const ClientId = z
  .string()
  .min(1)
  .max(MAX_CLIENT_ID_LENGTH)
  .regex(/^[\x21-\x7e]+$/, 'ids are printable ASCII without spaces')
  .refine((id) => id !== '.' && id !== '..', 'ids cannot be "." or "..": URLs cannot address them');

/** The longest `Idempotency-Key`. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/** An `Idempotency-Key` header's value: 1–200 printable ASCII characters (spaces allowed). */
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(MAX_IDEMPOTENCY_KEY_LENGTH)
  .regex(/^[\x20-\x7e]+$/, 'printable ASCII');

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

/**
 * The UTF-8 length of `text` in bytes, as `Buffer.byteLength` counts it (a lone surrogate as the
 * three bytes of U+FFFD), without allocating and without Node's `Buffer`.
 */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** The instants a client may give (`createdAt`): what Postgres and every client library store as is. */
const EARLIEST_INSTANT = Date.UTC(1970, 0, 1);
const LATEST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * An ISO 8601 instant with an offset, between 1970-01-01 and 9999-12-31 (UTC). Year 0000 and
 * offsets that push a date past year 9999 are valid ISO but not storable as sent.
 */
export const Instant = z.iso.datetime({ offset: true }).refine((value) => {
  const at = Date.parse(value);
  return at >= EARLIEST_INSTANT && at <= LATEST_INSTANT;
}, 'must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z');

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

/** A JSON object as the API returns it (metadata, policies, rendered messages). */
export const JsonObject = z.record(z.string(), z.unknown());

/** A JSON object in a request: storable as sent (see {@link jsonProblem}). */
export const JsonObjectIn = JsonObject.superRefine(storable);

/** `:id` of every `/v1/sessions/:id…` route: the client's session id. */
export const SessionParams = z.object({ id: ClientId });
