import {
  buildSummaryMessages,
  buildTruncateSummary,
  estimateTokens,
  serializeTranscript,
  validateSummaryOutput,
  type Message,
} from '@compactor/core';
import { assistant, conversation, text, toolCall, user } from '@compactor/core/testing';
import { describe, expect, it, vi } from 'vitest';
import type { SummarizerSettings } from './chunked-summary';
import { InvalidSummaryError, LlmAbortedError, LlmFatalError } from './errors';
import { createLlm } from './llm';
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

/**
 * A long coding session: the first turn states the goal, a constraint and reads `src/first.ts`;
 * each later turn asks for one more file, reads it (a tool output of `outputChars`) and edits it.
 */
function longSession(turns: number, outputChars = 1200): Message[] {
  const messages: Message[] = [
    user('Build the invoice exporter for the billing service. Never use floating point for money amounts.'),
    assistant([
      text('Reading the entry point first.'),
      toolCall('read', { path: 'src/first.ts' }, 'export const first = 1;\n'.repeat(outputChars / 24)),
    ]),
  ];
  for (let turn = 1; turn < turns; turn += 1) {
    messages.push(
      user(`Continue with step ${turn}: handle the export format number ${turn}.`),
      assistant([
        text(`Looking at module ${turn}.`),
        toolCall('read', { path: `src/module-${turn}.ts` }, `// module ${turn}\n`.repeat(outputChars / 14)),
        toolCall('edit', { path: `src/module-${turn}.ts`, old: 'a', new: 'b' }, 'applied'),
      ]),
    );
  }
  return conversation(messages);
}

const session = longSession(55);

/** Requests the stub received since `from`, for checking that none was too large. */
function requestsSince(from: number) {
  return stub().requests.slice(from);
}

/** The `<tag>` block of a prompt as it was sent over HTTP. */
function sentSection(text: string | undefined, tag: string): string | null {
  return new RegExp(`(?:^|\\n)<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(text ?? '')?.[1] ?? null;
}

const CONSTRAINT = 'Never use floating point for money amounts.';

describe('summarizer input larger than the summarizer window', () => {
  it('the session used here really is three times the window', () => {
    expect(estimateTokens(serializeTranscript(session, settings))).toBeGreaterThan(3 * WINDOW);
  });

  it('is summarised in chunks merged into one summary in which the first chunk survives', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

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
    // The first chunk's constraint reached every later request inside its <previous-summary>, as
    // sent over HTTP, while its own transcript was no longer part of those requests: the client
    // carried it from chunk to chunk (whatever the stub makes of it).
    const prompts = sent.map((r) => r.messages.at(-1)?.text);
    expect(sentSection(prompts[0], 'conversation')).toContain(CONSTRAINT);
    expect(sentSection(prompts[0], 'previous-summary')).toBeNull();
    for (const later of prompts.slice(1)) {
      expect(sentSection(later, 'conversation')).not.toContain(CONSTRAINT);
      expect(sentSection(later, 'previous-summary')).toContain(CONSTRAINT);
      // The first chunk's file ops are listed by the client in every later prompt.
      expect(later).toMatch(/Files touched so far[^\n]*\n<read-files>\n(?:.+\n)*src\/first\.ts\n/);
    }
    // The merged summary: the first chunk's goal and constraint, and the last chunk's state.
    expect(result.text).toMatch(/^## Goal\nBuild the invoice exporter for the billing service\./);
    expect(result.text).toContain(CONSTRAINT);
    expect(result.text).toContain('Continue with step 54: handle the export format number 54.');
    expect(validateSummaryOutput(result.text).ok).toBe(true);
    expect(result.usage.promptTokens).toBe(sent.reduce((sum, r) => sum + r.promptTokens, 0));
  });

  it('keeps the running summary paid for when a later chunk is invalid', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    // From the second request on, the "model" answers with nothing.
    stub().events.once('finished', () => stub().setFaults({ contextWindow: WINDOW, output: 'empty' }));
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

    const error = await llm.summarizeMessages({ messages: session, settings }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(InvalidSummaryError);
    const invalid = error as InvalidSummaryError;
    expect(invalid.reason).toBe('empty');
    const sent = requestsSince(from);
    expect(sent).toHaveLength(3); // chunk 1, then chunk 2 twice
    // The first chunk's summary, exactly as the second chunk's requests carried it.
    expect(invalid.partialSummary).toBe(sentSection(sent[1]?.messages.at(-1)?.text, 'previous-summary'));
    expect(invalid.partialSummary).toContain(CONSTRAINT);
    expect(invalid.partialSummaryCovers).toBeGreaterThan(0);
    expect(invalid.partialSummaryCovers).toBeLessThan(session.length);
    expect(invalid.usage.promptTokens).toBe(sent.reduce((sum, r) => sum + r.promptTokens, 0));
    // The truncate fallback starts from it instead of losing it.
    const fallback = buildTruncateSummary(session.slice(invalid.partialSummaryCovers), {
      previousSummary: invalid.partialSummary,
    });
    expect(fallback).toMatch(/^## Goal\nBuild the invoice exporter/);
    expect(fallback).toContain(CONSTRAINT);
    expect(fallback).toContain(`[Compacted ${session.length - invalid.partialSummaryCovers} messages`);
  });

  it('reports no partial summary when the first chunk is invalid', async () => {
    stub().setFaults({ contextWindow: WINDOW, output: 'empty' });
    const error = await createLlm(stubConfig(stub(), { countTokens: estimateTokens }))
      .summarizeMessages({ messages: session, settings })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'empty', partialSummary: null, partialSummaryCovers: 0 });
  });

  it('returns a previous summary with nothing after it unchanged, without a call', async () => {
    const previous = buildSummaryMessages({
      style: 'opencode',
      summaryText: '## Goal\nEarlier work.',
      compactionId: 'c1',
      auto: true,
      messagesCompacted: 9,
      createdAt: '2025-01-01T00:00:00Z',
    }).map((m, i) => ({ ...m, seq: 1000 + i }));
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));
    // Read from the messages, or given.
    for (const previousSummary of [undefined, '## Goal\nEarlier work.']) {
      const result = await llm.summarizeMessages({
        messages: previous,
        settings,
        ...(previousSummary === undefined ? {} : { previousSummary }),
      });
      expect(result).toMatchObject({ text: '## Goal\nEarlier work.', calls: 0, chunks: 0, costUsd: 0 });
    }
    expect(requestsSince(from)).toHaveLength(0);
    await expect(llm.summarizeMessages({ messages: [], settings })).rejects.toBeInstanceOf(LlmFatalError);
  });

  it('sends one request when the input fits', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));
    const result = await llm.summarizeMessages({ messages: session.slice(0, 4), settings });
    expect(result).toMatchObject({ chunks: 1, calls: 1 });
    expect(requestsSince(from)).toHaveLength(1);
  });

  it('learns an unknown window from overflow errors and re-plans', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

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
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

    const result = await llm.summarizeMessages({ messages: conversation([user(pastedLog)]), settings });

    const sent = requestsSince(from);
    expect(sent.every((r) => r.status === 200 && r.promptTokens + (r.maxTokens ?? 0) <= WINDOW)).toBe(true);
    expect(sent.at(-1)?.messages.at(-1)?.text).toContain("characters cut to fit the summarizer's window");
    expect(result.text).toContain('Why does the import fail?');
  });

  it('refuses, without sending anything, when the window cannot hold instructions and output', async () => {
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));
    for (const contextWindow of [2500, 1500]) {
      const error = await llm
        .summarizeMessages({ messages: session, settings: { ...settings, contextWindow } })
        .catch((e: unknown) => e);
      // A configuration problem: an overflow error would send the workflow into emergency compactions.
      expect(error).toBeInstanceOf(LlmFatalError);
    }
    expect(requestsSince(from)).toHaveLength(0);
  });

  it('stops between and within chunks when the signal fires', async () => {
    stub().setFaults({ contextWindow: WINDOW, latencyMs: 60_000 });
    const from = stub().requests.length;
    const controller = new AbortController();
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));
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
