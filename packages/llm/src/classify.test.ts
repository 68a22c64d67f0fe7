import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { describe, expect, it } from 'vitest';
import { classifyLlmError, retryAfterMs } from './classify';
import type { LlmErrorKind } from './errors';
import { InvalidSummaryError, LlmFatalError } from './errors';
import { ZERO_USAGE } from './usage';

/** An SDK error as the SDK builds it from a response. */
function apiError(status: number, body: object | undefined, headers: Record<string, string> = {}): APIError {
  return APIError.generate(
    status,
    body === undefined ? undefined : { error: body },
    undefined,
    new Headers(headers),
  );
}

describe('classifyLlmError', () => {
  it.each<[string, unknown, LlmErrorKind, Record<string, unknown>]>([
    [
      '429 rate limit',
      apiError(429, { message: 'Rate limit reached', code: 'rate_limit_exceeded' }),
      'retryable',
      { reason: 'rate-limit' },
    ],
    [
      '429 tokens-per-minute "request too large" for one request above the limit: an overflow (waiting never helps)',
      apiError(429, {
        message: 'Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000.',
      }),
      'overflow',
      {},
    ],
    [
      '429 tokens-per-minute limit used up by other requests stays a rate limit',
      apiError(429, {
        message:
          'Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29500, Requested 800.',
      }),
      'retryable',
      { reason: 'rate-limit' },
    ],
    ['500', apiError(500, { message: 'oops' }), 'retryable', { reason: 'server', status: 500 }],
    ['502 with no body', apiError(502, undefined), 'retryable', { reason: 'server' }],
    ['408', apiError(408, { message: 'timeout' }), 'retryable', { reason: 'server' }],
    ['409 lock conflict', apiError(409, { message: 'conflict' }), 'retryable', { reason: 'server' }],
    [
      '400 context_length_exceeded',
      apiError(400, {
        message: "This model's maximum context length is 8192 tokens.",
        code: 'context_length_exceeded',
      }),
      'overflow',
      {},
    ],
    ['400 with no body', apiError(400, undefined), 'overflow', {}],
    ['413', apiError(413, { message: 'Request Entity Too Large' }), 'overflow', {}],
    [
      '400 max_tokens parameter error is not an overflow',
      apiError(400, { message: "Unsupported parameter: 'max_tokens' is not supported with this model." }),
      'fatal',
      { status: 400 },
    ],
    ['401', apiError(401, { message: 'Incorrect API key provided' }), 'fatal', { status: 401 }],
    ['403', apiError(403, { message: 'forbidden' }), 'fatal', {}],
    ['404 unknown model', apiError(404, { message: 'The model `x` does not exist' }), 'fatal', {}],
    ['422', apiError(422, { message: 'unprocessable' }), 'fatal', {}],
    [
      'connection error',
      new APIConnectionError({ message: 'Connection error.' }),
      'retryable',
      { reason: 'connection' },
    ],
    ['SDK timeout', new APIConnectionTimeoutError(), 'retryable', { reason: 'timeout' }],
    ['user abort', new APIUserAbortError(), 'aborted', {}],
    [
      'fetch "terminated" (socket closed mid-body)',
      new TypeError('terminated', {
        cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
      }),
      'retryable',
      { reason: 'connection' },
    ],
    [
      'ECONNRESET',
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      'retryable',
      { reason: 'connection' },
    ],
    [
      'a body that is not JSON',
      new SyntaxError('Unexpected end of JSON input'),
      'retryable',
      { reason: 'malformed-response' },
    ],
    [
      'an SSE error event (no status)',
      new APIError(undefined, { message: 'upstream failed' }, 'upstream failed', undefined),
      'retryable',
      { reason: 'server' },
    ],
    ['a programming error', new RangeError('bad index'), 'fatal', {}],
  ])('%s → %s', (_name, error, kind, fields) => {
    const classified = classifyLlmError(error, { now: 0 });
    expect(classified.kind).toBe(kind);
    expect(classified).toMatchObject(fields);
    expect(classified.cause).toBe(error);
  });

  it('keeps an error that is already classified', () => {
    const error = new LlmFatalError('no');
    expect(classifyLlmError(error)).toBe(error);
    const invalid = new InvalidSummaryError('empty', 2, { usage: ZERO_USAGE, costUsd: null });
    expect(classifyLlmError(invalid)).toBe(invalid);
  });

  it.each([
    ['the caller aborted wins over everything', { aborted: true, timedOutAfterMs: 10 }, 'aborted'],
    ['our timeout wins over the abort it caused', { timedOutAfterMs: 10 }, 'retryable'],
  ] as const)('%s', (_name, context, kind) => {
    expect(classifyLlmError(new APIUserAbortError(), context).kind).toBe(kind);
  });

  it('carries the wait a 429 asked for', () => {
    const error = classifyLlmError(apiError(429, { message: 'slow down' }, { 'retry-after': '20' }));
    expect(error).toMatchObject({ retryAfterMs: 20_000 });
  });
});

describe('retryAfterMs', () => {
  it.each<[string, Record<string, string>, number | null]>([
    ['seconds', { 'retry-after': '2' }, 2000],
    ['fractional seconds', { 'retry-after': '0.25' }, 250],
    ['retry-after-ms wins', { 'retry-after-ms': '150', 'retry-after': '9' }, 150],
    ['an HTTP date', { 'retry-after': new Date(61_000).toUTCString() }, 60_000],
    ['a date in the past', { 'retry-after': new Date(0).toUTCString() }, 0],
    ['garbage', { 'retry-after': 'soon' }, null],
    ['negative', { 'retry-after': '-1' }, null],
    ['absent', {}, null],
  ])('%s', (_name, headers, expected) => {
    expect(retryAfterMs(new Headers(headers), 1000)).toBe(expected);
  });
});
