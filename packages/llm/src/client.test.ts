import { describe, expect, it, vi } from 'vitest';
import type { CompletionRequest } from './client';
import { createChatCompleter } from './client';
import type { LlmError } from './errors';
import { LlmAbortedError, LlmFatalError, LlmOverflowError, LlmRetryableError } from './errors';
import { stubConfig, useLlmStub } from './test-support/stub';

const stub = useLlmStub();

const request: CompletionRequest = {
  model: 'gpt-4o-mini',
  system: 'You are a test.',
  user: 'Say something about <conversation> tags.',
  maxOutputTokens: 200,
};

/** The classified error one request with these fault headers ends in. */
async function failureWith(headers: Record<string, string>, stream = false): Promise<LlmError> {
  const completer = createChatCompleter(stubConfig(stub(), { defaultHeaders: headers, stream }));
  return completer.complete(request).then(
    () => {
      throw new Error('expected the request to fail');
    },
    (error: LlmError) => error,
  );
}

describe('completions against the stub', () => {
  it.each([false, true])('returns text, usage and a cost estimate (stream: %s)', async (stream) => {
    const completer = createChatCompleter(stubConfig(stub(), { stream }));
    const result = await completer.complete(request);
    const seen = stub().requests.at(-1);
    expect(result.text).toMatch(/^Stub reply to: Say something/);
    expect(result.finishReason).toBe('stop');
    expect(result.usage.promptTokens).toBe(seen?.promptTokens);
    expect(result.usage.completionTokens).toBe(Math.ceil(result.text.length / 4));
    // gpt-4o-mini: $0.15 / $0.60 per million tokens.
    const expected = (result.usage.promptTokens * 0.15 + result.usage.completionTokens * 0.6) / 1e6;
    expect(result.costUsd).toBeCloseTo(expected, 10);
    expect(seen).toMatchObject({ stream, maxTokens: 200, model: 'gpt-4o-mini' });
  });

  it('has no cost for a model the price table does not know', async () => {
    const result = await createChatCompleter(stubConfig(stub())).complete({
      ...request,
      model: 'stub-summarizer',
    });
    expect(result.costUsd).toBeNull();
  });

  it('can send max_tokens for servers that only know that name', async () => {
    await createChatCompleter(stubConfig(stub(), { maxTokensParameter: 'max_tokens' })).complete(request);
    expect(stub().requests.at(-1)?.maxTokens).toBe(200);
  });
});

describe('each fault is classified', () => {
  it.each<[string, Record<string, string>, (error: LlmError) => void]>([
    [
      '429 with retry-after',
      { 'x-stub-status': '429', 'x-stub-retry-after': '3' },
      (error) => {
        expect(error).toBeInstanceOf(LlmRetryableError);
        expect(error).toMatchObject({ reason: 'rate-limit', retryAfterMs: 3000, status: 429 });
      },
    ],
    [
      '429 without retry-after',
      { 'x-stub-status': '429' },
      (error) => {
        expect(error).toMatchObject({ kind: 'retryable', reason: 'rate-limit', retryAfterMs: null });
      },
    ],
    [
      '429 with no body',
      { 'x-stub-status': '429', 'x-stub-error-body': 'none' },
      (error) => {
        expect(error).toMatchObject({ kind: 'retryable', reason: 'rate-limit' });
      },
    ],
    [
      '500',
      { 'x-stub-status': '500' },
      (error) => expect(error).toMatchObject({ kind: 'retryable', reason: 'server', status: 500 }),
    ],
    [
      '503 with retry-after',
      { 'x-stub-status': '503', 'x-stub-retry-after': '0.5' },
      (error) => {
        expect(error).toMatchObject({ kind: 'retryable', reason: 'server', retryAfterMs: 500 });
      },
    ],
    [
      '401',
      { 'x-stub-status': '401' },
      (error) => {
        expect(error).toBeInstanceOf(LlmFatalError);
        expect(error.status).toBe(401);
      },
    ],
    ['400 bad request', { 'x-stub-status': '400' }, (error) => expect(error).toBeInstanceOf(LlmFatalError)],
    [
      'context length exceeded',
      { 'x-stub-context-window': '50' },
      (error) => {
        expect(error).toBeInstanceOf(LlmOverflowError);
        expect((error as LlmOverflowError).matched).not.toBeNull();
      },
    ],
    [
      '413 with no body',
      { 'x-stub-status': '413', 'x-stub-error-body': 'none' },
      (error) => {
        expect(error).toBeInstanceOf(LlmOverflowError);
      },
    ],
    [
      'a connection dropped before the answer',
      { 'x-stub-drop': 'before-response' },
      (error) => {
        expect(error).toMatchObject({ kind: 'retryable', reason: 'connection' });
      },
    ],
    [
      'a connection dropped mid-body',
      { 'x-stub-drop': 'mid-body' },
      (error) => {
        expect(error).toMatchObject({ kind: 'retryable', reason: 'connection' });
      },
    ],
    [
      'malformed JSON',
      { 'x-stub-output': 'malformed' },
      (error) => {
        expect(error).toMatchObject({ kind: 'retryable', reason: 'malformed-response' });
      },
    ],
  ])('%s', async (_name, headers, check) => {
    const before = stub().stats.requests;
    check(await failureWith(headers));
    // The SDK's own retries are off: the job queue owns retries.
    expect(stub().stats.requests - before).toBe(1);
  });

  it.each<[string, Record<string, string>, Partial<LlmRetryableError>]>([
    ['a stream dropped mid-body', { 'x-stub-drop': 'mid-body' }, { reason: 'connection' }],
    ['a malformed stream', { 'x-stub-output': 'malformed' }, { kind: 'retryable' }],
    ['a 503 before the stream', { 'x-stub-status': '503' }, { reason: 'server' }],
  ])('streaming: %s', async (_name, headers, expected) => {
    const error = await failureWith(headers, true);
    expect(error).toBeInstanceOf(LlmRetryableError);
    expect(error).toMatchObject(expected);
  });

  it('times out as a retryable error, and the server sees the connection close', async () => {
    const completer = createChatCompleter(
      stubConfig(stub(), { defaultHeaders: { 'x-stub-latency-ms': '30000' } }),
    );
    const seen = stub().requests.length;
    // Long enough for the request to reach the server on a busy machine, far below the stub's latency.
    const error = await completer.complete({ ...request, timeoutMs: 1000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRetryableError);
    expect(error).toMatchObject({ reason: 'timeout' });
    await vi.waitFor(() => expect(stub().requests[seen]).toMatchObject({ clientClosed: true, status: null }));
  });
});

describe('cancellation', () => {
  it.each([false, true])('the AbortSignal stops the request in flight (stream: %s)', async (stream) => {
    const completer = createChatCompleter(
      stubConfig(stub(), { stream, defaultHeaders: { 'x-stub-latency-ms': '30000' } }),
    );
    const controller = new AbortController();
    const seen = stub().requests.length;
    const pending = completer.complete({ ...request, signal: controller.signal }).catch((e: unknown) => e);
    await stub().waitForRequests(seen + 1);
    controller.abort(new Error('worker shutting down'));
    expect(await pending).toBeInstanceOf(LlmAbortedError);
    // The server saw the connection close before it answered: the request really stopped.
    await vi.waitFor(() => expect(stub().requests[seen]).toMatchObject({ clientClosed: true, status: null }));
    expect(stub().stats.inFlight).toBe(0);
  });

  it('an already aborted signal sends nothing', async () => {
    const before = stub().stats.requests;
    const error = await createChatCompleter(stubConfig(stub()))
      .complete({ ...request, signal: AbortSignal.abort() })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmAbortedError);
    expect(stub().stats.requests).toBe(before);
  });
});
