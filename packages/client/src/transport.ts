import type { z } from 'zod';
import { CompactorApiError, CompactorResponseError } from './errors.js';
import { mayRetry, parseRetryAfter, retryDelayMs, sleep, type RetryPolicy } from './retry.js';

/** One API call: method, path (already encoded), query, body, extra headers. */
export interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /**
   * Sending it twice writes it once (an append whose every message carries an id): retried on
   * gateway statuses as a write with an `Idempotency-Key` is.
   */
  idempotent?: boolean;
}

/** Where and as whom the client calls, and how it retries. */
export interface TransportSettings {
  baseUrl: string;
  apiKey: string | null;
  headers: Record<string, string>;
  retry: RetryPolicy;
  validateResponses: boolean;
  /** What sends the requests: global `fetch` unless the caller gives another. */
  fetch: typeof fetch;
}

/** The URL of a call: base + path + query (undefined values left out). */
export function callUrl(settings: TransportSettings, path: string, query: Call['query'] = {}): string {
  const url = new URL(`${settings.baseUrl.replace(/\/+$/, '')}${path}`);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return url.toString();
}

/** The headers of every call: the bearer key and the caller's own. */
export function baseHeaders(settings: TransportSettings): Record<string, string> {
  return {
    ...settings.headers,
    ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
  };
}

/**
 * Sends a call with the settings' `fetch`, retrying what {@link mayRetry} allows (the API's own 429/503
 * refusals; gateway errors on reads, on writes with an `Idempotency-Key` and on appends whose messages
 * all carry ids) after `Retry-After`
 * or a jittered exponential backoff; any other non-2xx throws {@link CompactorApiError}. Network
 * errors are not retried: the request may have been written.
 */
export async function send(settings: TransportSettings, call: Call): Promise<Response> {
  const request = `${call.method} ${call.path}`;
  const init: RequestInit = {
    method: call.method,
    headers: {
      accept: 'application/json',
      ...baseHeaders(settings),
      ...(call.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...call.headers,
    },
    body: call.body !== undefined ? JSON.stringify(call.body) : null,
    signal: call.signal ?? null,
  };
  const idempotent =
    call.idempotent === true ||
    Object.keys(call.headers ?? {}).some((h) => h.toLowerCase() === 'idempotency-key');
  for (let retry = 0; ; retry += 1) {
    const response = await settings.fetch(callUrl(settings, call.path, call.query), init);
    if (response.ok) return response;
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
    const error = await CompactorApiError.from(response, request);
    if (mayRetry(call.method, error, idempotent)) {
      const delay = retryDelayMs(settings.retry, retry, retryAfter);
      if (delay !== null) {
        await sleep(delay, call.signal);
        continue;
      }
    }
    throw error;
  }
}

/** Sends a call and reads its JSON answer (see {@link readJson}). */
export async function sendJson<S extends z.ZodType>(
  settings: TransportSettings,
  call: Call,
  schema: S,
): Promise<z.output<S>> {
  return readJson(settings, await send(settings, call), schema, `${call.method} ${call.path}`);
}

/** Reads a JSON answer, checked against `schema` when the settings say so. */
export async function readJson<S extends z.ZodType>(
  settings: TransportSettings,
  response: Response,
  schema: S,
  request: string,
): Promise<z.output<S>> {
  const json: unknown = await response.json();
  if (!settings.validateResponses) return json as z.output<S>;
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  throw new CompactorResponseError(
    `${request}: the answer does not match the contract: ${parsed.error.message}`,
    request,
    parsed.error.issues,
  );
}
