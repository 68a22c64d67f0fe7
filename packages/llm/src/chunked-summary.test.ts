import { serializeTranscript, validateSummaryOutput } from '@compactor/core';
import { describe, expect, it, vi } from 'vitest';
import type { SummarizerSettings } from './chunked-summary';
import { estimateTokenCount } from './count-tokens';
import { LlmAbortedError, LlmOverflowError } from './errors';
import { createLlm } from './llm';
import { longSession, user } from './test-support/messages';
import { stubConfig, useLlmStub } from './test-support/stub';

const stub = useLlmStub();

/** The summarizer's window, enforced by the stub exactly as a provider would (prompt + max tokens). */
const WINDOW = 6000;
const settings: SummarizerSettings = {
  model: 'stub-summarizer',
  maxOutputTokens: 1500,
  timeoutMs: 10_000,
  contextWindow: WINDOW,
  toolResultMaxChars: 2000,
  toolArgsMaxChars: 1000,
};

const session = longSession(55);

/** Requests the stub received since `from`, for checking that none was too large. */
function requestsSince(from: number) {
  return stub().requests.slice(from);
}

describe('summarizer input larger than the summarizer window', () => {
  it('the session used here really is three times the window', () => {
    expect(estimateTokenCount(serializeTranscript(session, settings))).toBeGreaterThan(3 * WINDOW);
  });

  it('is summarised in chunks merged into one summary in which the first chunk survives', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokenCount }));

    const result = await llm.summarizeMessages({ messages: session, settings });

    const sent = requestsSince(from);
    expect(result.chunks).toBeGreaterThanOrEqual(3);
    expect(result.calls).toBe(result.chunks);
    expect(sent).toHaveLength(result.calls);
    // Never a request known to be too large: every one fitted and was answered.
    for (const request of sent) {
      expect(request.promptTokens + (request.maxTokens ?? 0)).toBeLessThanOrEqual(WINDOW);
      expect(request.status).toBe(200);
    }
    // Every chunk after the first is an update of the running summary.
    expect(sent.slice(1).every((r) => r.messages.some((m) => m.text.includes('<previous-summary>')))).toBe(
      true,
    );
    // Facts from the first chunk: the goal, the constraint, the first file read.
    expect(result.text).toMatch(/^## Goal\nBuild the invoice exporter for the billing service\./);
    expect(result.text).toContain('Never use floating point for money amounts.');
    expect(result.text).toMatch(/<read-files>\nsrc\/first\.ts\n<\/read-files>/);
    // …and the last chunk's state.
    expect(result.text).toContain('Continue with step 54: handle the export format number 54.');
    expect(validateSummaryOutput(result.text).ok).toBe(true);
    expect(result.usage.promptTokens).toBe(sent.reduce((sum, r) => sum + r.promptTokens, 0));
  });

  it('sends one request when the input fits', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokenCount }));
    const result = await llm.summarizeMessages({ messages: session.slice(0, 4), settings });
    expect(result).toMatchObject({ chunks: 1, calls: 1 });
    expect(requestsSince(from)).toHaveLength(1);
  });

  it('learns an unknown window from overflow errors and re-plans', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokenCount }));

    const result = await llm.summarizeMessages({
      messages: session,
      settings: { ...settings, contextWindow: null },
    });

    const statuses = requestsSince(from).map((r) => r.status);
    expect(statuses[0]).toBe(400);
    expect(statuses.filter((s) => s === 200)).toHaveLength(result.chunks);
    expect(result.text).toContain('Never use floating point for money amounts.');
  });

  it('absorbs the difference between the exact tokenizer and the provider count', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const result = await createLlm(stubConfig(stub())).summarizeMessages({ messages: session, settings });
    expect(result.text).toMatch(/^## Goal\nBuild the invoice exporter/);
  });

  it('cuts a single message larger than the whole window in the middle', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const from = stub().requests.length;
    const pastedLog = `Why does the import fail? Here is the log:\n${'WARN retrying connection\n'.repeat(2000)}FATAL: disk full`;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokenCount }));

    const result = await llm.summarizeMessages({ messages: [user(pastedLog)], settings });

    const sent = requestsSince(from);
    expect(sent.every((r) => r.status === 200 && r.promptTokens + (r.maxTokens ?? 0) <= WINDOW)).toBe(true);
    expect(sent.at(-1)?.messages.at(-1)?.text).toContain("characters cut to fit the summarizer's window");
    expect(result.text).toContain('Why does the import fail?');
  });

  it('refuses, without sending anything, when the window cannot hold instructions and output', async () => {
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokenCount }));
    const error = await llm
      .summarizeMessages({ messages: session, settings: { ...settings, contextWindow: 2500 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmOverflowError);
    expect(requestsSince(from)).toHaveLength(0);
  });

  it('stops between and within chunks when the signal fires', async () => {
    stub().setFaults({ contextWindow: WINDOW, latencyMs: 60_000 });
    const from = stub().requests.length;
    const controller = new AbortController();
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokenCount }));
    const pending = llm
      .summarizeMessages({ messages: session, settings, signal: controller.signal })
      .catch((e: unknown) => e);
    await stub().waitForRequests(from + 1);
    controller.abort();
    expect(await pending).toBeInstanceOf(LlmAbortedError);
    await vi.waitFor(() => expect(stub().requests[from]?.clientClosed).toBe(true));
    // No later chunk was sent after the cancellation.
    expect(stub().requests).toHaveLength(from + 1);
  });
});
