/**
 * The drop-in request's own headers: Compactor's (`X-Compactor-*`), read and checked, and the
 * ones passed on to the provider.
 */
import type { ConversationRequest } from './conversation';
import { DropInError } from './errors';
import { UPSTREAM_KEY_HEADER } from './upstream-config';

export type RequestHeaders = Record<string, string | string[] | undefined>;

export const SESSION_HEADER = 'x-compactor-session';

/** One header's value (the first, when sent twice), or undefined when absent or empty. */
export function headerValue(headers: RequestHeaders, name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

/** The longest session id a header may name (the API's own limit on client ids). */
const MAX_SESSION_ID_LENGTH = 200;

/** `X-Compactor-Session`, checked: printable ASCII, as the API's session ids are. */
export function sessionHeaderOf(headers: RequestHeaders): string | undefined {
  const value = headerValue(headers, SESSION_HEADER);
  if (value === undefined) return undefined;
  if (
    value.length > MAX_SESSION_ID_LENGTH ||
    !/^[\x21-\x7e]+$/.test(value) ||
    value === '.' ||
    value === '..'
  )
    throw new DropInError(
      'invalid_header',
      `X-Compactor-Session must be 1-${MAX_SESSION_ID_LENGTH} printable ASCII characters without spaces`,
    );
  return value;
}

/** `X-Compactor-Context-Window`, `-Max-Output-Tokens`, `-Recall`: used when the session is created. */
export function overridesOf(headers: RequestHeaders): ConversationRequest['overrides'] {
  const contextWindow = positiveInteger(headers, 'x-compactor-context-window');
  const maxOutputTokens = positiveInteger(headers, 'x-compactor-max-output-tokens');
  const recall = flag(headers, 'x-compactor-recall');
  return {
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
    ...(recall !== undefined ? { recall } : {}),
  };
}

function positiveInteger(headers: RequestHeaders, name: string): number | undefined {
  const value = headerValue(headers, name);
  if (value === undefined) return undefined;
  const number = /^[0-9]{1,9}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(number) || number <= 0)
    throw new DropInError('invalid_header', `${name} must be a positive integer (tokens)`);
  return number;
}

function flag(headers: RequestHeaders, name: string): boolean | undefined {
  const value = headerValue(headers, name)?.toLowerCase();
  if (value === undefined) return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new DropInError('invalid_header', `${name} must be true or false`);
}

/**
 * Headers that are the client's business with the provider: passed on. Not the connection's
 * own, not credentials (Compactor's key, the client's provider key, cookies), not Compactor's,
 * and not the SDK's (`x-stainless-*`, which the upstream client sets for itself).
 */
const NOT_FORWARDED = /^(?:x-compactor-|x-stainless-|x-forwarded-)/;
const NOT_FORWARDED_NAMES = new Set(['x-api-key', UPSTREAM_KEY_HEADER, 'x-request-id', 'x-real-ip']);

export function forwardedHeaders(headers: RequestHeaders): Record<string, string> {
  const forwarded: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    const isProviderHeader = lower.startsWith('x-') || lower.startsWith('openai-');
    if (!isProviderHeader || NOT_FORWARDED.test(lower) || NOT_FORWARDED_NAMES.has(lower)) continue;
    const text = Array.isArray(value) ? value[0] : value;
    if (text !== undefined) forwarded[lower] = text;
  }
  return forwarded;
}
