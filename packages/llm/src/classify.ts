import { detectOverflowError } from '@compactor/core';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { LlmError } from './errors';
import { LlmAbortedError, LlmFatalError, LlmOverflowError, LlmRetryableError, isLlmError } from './errors';

/** What the caller of the SDK knows that the thrown error may not say. */
export interface ClassifyContext {
  /** The caller's own AbortSignal had fired: whatever the SDK threw, this is a cancellation. */
  aborted?: boolean;
  /** Our per-request timeout had fired. */
  timedOutAfterMs?: number | null;
  /** For `retry-after` given as an HTTP date. */
  now?: number;
}

/** Statuses a provider uses for "try again": request timeout, lock conflict, rate limit, server trouble. */
const RETRYABLE_STATUSES = new Set([408, 409, 429]);

/** Socket-level failures of Node's fetch (undici) and of proxies in between. */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Maps anything the OpenAI SDK (or fetch underneath it) throws onto the error classes the job
 * queue acts on. Overflow is decided by core's classifier, so the API and the worker agree on
 * what an overflow looks like.
 */
export function classifyLlmError(error: unknown, context: ClassifyContext = {}): LlmError {
  if (isLlmError(error)) return error;
  if (context.aborted) return new LlmAbortedError('the request was aborted by the caller', { cause: error });
  // Our timeout aborts the SDK's request too, so it must be recognised before a user abort.
  if (context.timedOutAfterMs != null || error instanceof APIConnectionTimeoutError) {
    const after = context.timedOutAfterMs != null ? ` after ${context.timedOutAfterMs} ms` : '';
    return new LlmRetryableError(`the request timed out${after}`, 'timeout', { cause: error });
  }
  if (error instanceof APIUserAbortError) {
    return new LlmAbortedError('the request was aborted by the caller', { cause: error });
  }
  if (error instanceof APIConnectionError) {
    return new LlmRetryableError(`connection error: ${describeCause(error)}`, 'connection', { cause: error });
  }
  if (error instanceof APIError) return classifyApiError(error, context.now ?? Date.now());
  if (error instanceof SyntaxError) {
    // A 200 whose body is not JSON: a proxy or a provider having a bad moment.
    return new LlmRetryableError(`malformed response: ${error.message}`, 'malformed-response', {
      cause: error,
    });
  }
  if (isConnectionFailure(error)) {
    return new LlmRetryableError(`connection error: ${describeCause(error)}`, 'connection', { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new LlmFatalError(`unexpected error calling the LLM: ${message}`, { cause: error });
}

function classifyApiError(error: APIError, now: number): LlmError {
  const status = error.status ?? null;
  const body = error.error === undefined || error.error === null ? '' : JSON.stringify(error.error);
  const details = { status, cause: error };

  // Core decides what an overflow is (it knows a 429 "request too large … tokens per min" is a
  // rate limit, and a bare "400 (no body)" an overflow), so the API and the worker agree.
  const overflow = detectOverflowError({ message: error.message, body, status });
  if (overflow.overflow) return new LlmOverflowError(error.message, overflow.matched, details);

  if (status === null) {
    // An `error` event inside a stream: the provider failed mid-answer.
    return new LlmRetryableError(`provider error during the stream: ${error.message}`, 'server', details);
  }
  if (status >= 500 || RETRYABLE_STATUSES.has(status)) {
    const reason = status === 429 ? 'rate-limit' : 'server';
    return new LlmRetryableError(error.message, reason, {
      ...details,
      retryAfterMs: retryAfterMs(error.headers, now),
    });
  }
  return new LlmFatalError(error.message, details);
}

/**
 * The wait a provider asked for: `retry-after-ms` (OpenAI's), else `retry-after` in seconds or
 * as an HTTP date. `null` when absent or unreadable.
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | null {
  if (!headers) return null;
  const millis = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(millis) && millis >= 0) return millis;
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return null;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : null;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function errorCode(error: unknown): string | null {
  if (error === null || typeof error !== 'object') return null;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : null;
}

/** Walks the `cause` chain: fetch wraps socket errors as `TypeError('fetch failed' | 'terminated')`. */
function isConnectionFailure(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth += 1) {
    const code = errorCode(current);
    if (code !== null && CONNECTION_ERROR_CODES.has(code)) return true;
    if (current instanceof TypeError && /terminated|fetch failed|socket/i.test(current.message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

function describeCause(error: unknown): string {
  const parts: string[] = [];
  for (let current: unknown = error, depth = 0; current && depth < 5; depth += 1) {
    if (current instanceof Error) parts.push(errorCode(current) ?? current.message);
    current = (current as { cause?: unknown }).cause;
  }
  return [...new Set(parts)].join(' ← ');
}
