import { buildSummaryPrompt, estimateTokens } from '@compactor/core';
import { assistant, conversation, text, toolCall, user } from '@compactor/core/testing';
import { describe, expect, it } from 'vitest';
import { InvalidSummaryError, LlmOverflowError, LlmRetryableError } from './errors';
import { createLlm } from './llm';
import { stubConfig, useLlmStub } from './test-support/stub';

const stub = useLlmStub();

const prompt = buildSummaryPrompt({
  messages: conversation([
    user('Rename the `fetchUser` helper to `loadUser` everywhere. Keep the old name as a deprecated alias.'),
    assistant([
      text('Searching for uses.'),
      toolCall('grep', { pattern: 'fetchUser' }, 'src/a.ts:3\nsrc/b.ts:9'),
    ]),
  ]),
});
const request = { prompt, model: 'gpt-4o-mini', maxOutputTokens: 1000, timeoutMs: 10_000 };

function llm(headers: Record<string, string> = {}, invalidOutputRetries?: number) {
  return createLlm(
    stubConfig(stub(), {
      defaultHeaders: headers,
      countTokens: estimateTokens,
      ...(invalidOutputRetries !== undefined ? { invalidOutputRetries } : {}),
    }),
  );
}

describe('summarize', () => {
  it('returns the validated summary with usage and cost', async () => {
    const result = await llm().summarize(request);
    expect(result.text).toMatch(/^## Goal\nRename the `fetchUser` helper/);
    expect(result.text).toContain('Keep the old name as a deprecated alias.');
    expect(result).toMatchObject({ calls: 1, chunks: 1, model: 'gpt-4o-mini' });
    expect(result.usage.promptTokens).toBe(stub().requests.at(-1)?.promptTokens);
    expect(result.costUsd).toBeGreaterThan(0);
  });

  it.each([
    ['empty', 'empty'],
    ['echo', 'echoes-instructions'],
    ['tool-call', 'calls-tool'],
  ])('retries %s output, then reports it as InvalidSummaryError', async (output, reason) => {
    const before = stub().stats.requests;
    const error = await llm({ 'x-stub-output': output }, 2)
      .summarize(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidSummaryError);
    expect(error).toMatchObject({ reason, attempts: 3, kind: 'invalid-output' });
    expect(stub().stats.requests - before).toBe(3);
    // The failed attempts were paid for, and the error says how much.
    expect((error as InvalidSummaryError).usage.promptTokens).toBe(
      3 * (stub().requests.at(-1)?.promptTokens ?? 0),
    );
  });

  it('succeeds when a retry after an invalid output is valid', async () => {
    stub().setFaults({ output: 'empty', times: 1 });
    const result = await llm().summarize(request);
    expect(result.calls).toBe(2);
    expect(result.text).toMatch(/^## Goal/);
    expect(result.usage.completionTokens).toBe(Math.ceil(result.text.length / 4));
  });

  // The stub's summary of this prompt is about 130 tokens.
  it('never accepts a summary cut off at maxOutputTokens: one retry asking for a shorter one, then cut-off', async () => {
    const from = stub().requests.length;
    const error = await llm({}, 3)
      .summarize({ ...request, maxOutputTokens: 60 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidSummaryError);
    expect(error).toMatchObject({ reason: 'cut-off', attempts: 2, partialSummary: null });
    // Retried once only, although three retries were allowed: the same cut would happen again.
    const sent = stub().requests.slice(from);
    expect(sent.map((r) => r.maxTokens)).toEqual([60, 60]);
    expect(sent[0]?.messages.at(-1)?.text).not.toContain('cut off');
    expect(sent[1]?.messages.at(-1)?.text).toContain('was cut off at the output limit of 60 tokens');
    expect((error as InvalidSummaryError).usage.completionTokens).toBe(120);
  });

  it('retries a cut-off summary with a larger budget when the limit allows', async () => {
    const from = stub().requests.length;
    const result = await llm().summarize({ ...request, maxOutputTokens: 100, maxOutputTokensLimit: 1000 });
    expect(
      stub()
        .requests.slice(from)
        .map((r) => r.maxTokens),
    ).toEqual([100, 200]);
    expect(result).toMatchObject({ calls: 2, truncated: false });
    expect(result.text).toMatch(/^## Goal/);
    expect(result.text).toContain('## Critical Context');
  });

  it('does not retry a cut-off summary when the longer prompt would not fit the window', async () => {
    const from = stub().requests.length;
    const prompt = estimateTokens(request.prompt.system) + estimateTokens(request.prompt.user) + 16;
    const error = await llm()
      .summarize({ ...request, maxOutputTokens: 60, contextWindow: prompt + 60 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'cut-off', attempts: 1 });
    expect(stub().requests.length - from).toBe(1);
  });

  it('a provider error after an invalid attempt carries what that attempt cost', async () => {
    // The first answer is empty (invalid, paid for); the retry meets a 503.
    stub().setFaults({ output: 'empty', times: 1 });
    stub().events.once('finished', () => stub().setFaults({ status: 503 }));
    const from = stub().requests.length;
    const error = await llm()
      .summarize(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRetryableError);
    const sent = stub().requests.slice(from);
    expect(sent.map((r) => r.status)).toEqual([200, 503]);
    expect((error as LlmRetryableError).spent).toMatchObject({
      calls: 1,
      usage: { promptTokens: sent[0]?.promptTokens },
    });
  });

  it('rejects a cut-off answer at once when the caller retries with a smaller request itself', async () => {
    const from = stub().requests.length;
    const error = await llm()
      .summarize({ ...request, maxOutputTokens: 60, cutOffRetry: false })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'cut-off', attempts: 1, spent: { calls: 1 } });
    expect(stub().requests.length - from).toBe(1);
  });

  it('does not retry provider errors itself: the queue decides', async () => {
    const before = stub().stats.requests;
    const error = await llm({ 'x-stub-status': '503' })
      .summarize(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRetryableError);
    expect(stub().stats.requests - before).toBe(1);
    // Nothing was answered, so nothing was spent.
    expect((error as LlmRetryableError).spent).toBeUndefined();
  });

  it('refuses a prompt known not to fit the window, without sending it', async () => {
    const before = stub().stats.requests;
    const error = await llm()
      .summarize({ ...request, contextWindow: 1200 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmOverflowError);
    expect((error as Error).message).toMatch(/not sent/);
    expect(stub().stats.requests).toBe(before);
  });
});
