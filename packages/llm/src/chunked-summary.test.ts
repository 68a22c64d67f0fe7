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
import { FOLD_TARGET_SHARE, MAX_CUT_OFFS_IN_A_ROW } from './chunked-summary';
import { promptTokenBudget } from './chunking';
import { InvalidSummaryError, LlmAbortedError, LlmFatalError, LlmRetryableError } from './errors';
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

  it('counts a prompt that fits once: the count that planned it is not repeated before sending', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const counted: number[] = [];
    const countTokens = (text: string) => {
      counted.push(text.length);
      return estimateTokens(text);
    };
    const llm = createLlm(stubConfig(stub(), { countTokens }));
    const from = stub().requests.length;
    await llm.summarizeMessages({ messages: session.slice(0, 4), settings });
    const [sent] = requestsSince(from);
    const userPrompt = sent!.messages.find((m) => m.role === 'user')!.text;
    // The system and user prompts, each counted exactly once.
    expect(counted.filter((length) => length === userPrompt.length)).toHaveLength(1);
    expect(counted).toHaveLength(2);
  });

  it('never tokenizes a prompt whose bytes alone fit the window', async () => {
    stub().setFaults({});
    const counted: string[] = [];
    const countTokens = (text: string) => {
      counted.push(text);
      return estimateTokens(text);
    };
    const llm = createLlm(stubConfig(stub(), { countTokens }));
    const result = await llm.summarizeMessages({
      messages: session.slice(0, 4),
      settings: { ...settings, contextWindow: 1_000_000 },
    });
    expect(result).toMatchObject({ chunks: 1, calls: 1 });
    expect(counted).toEqual([]);
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

/**
 * A session far larger than the summarizer's window, shaped like the 1,536-message session whose
 * summary never converged: every turn states a constraint and exact values, makes a decision and
 * touches a new file, so a summary that keeps everything grows with every chunk merged into it.
 */
function sprawlingSession(turns: number): Message[] {
  const messages: Message[] = [
    user('Port the reporting service to the new ledger API. Never drop a ledger entry silently.'),
  ];
  for (let turn = 1; turn < turns; turn += 1) {
    messages.push(
      user(
        `Step ${turn}: migrate report ${turn} in packages/report-${turn}. Always keep the \`--report-${turn}\` ` +
          `flag working and make sure REPORT_${turn}_LIMIT stays at ${1000 + turn}.`,
      ),
      assistant([
        text(`I decided to use the streaming reader for report ${turn} instead of the batch one.`),
        toolCall('read', { path: `packages/report-${turn}/src/index.ts` }, `// report ${turn}\n`.repeat(90)),
        toolCall('edit', { path: `packages/report-${turn}/src/index.ts`, old: 'a', new: 'b' }, 'applied'),
      ]),
    );
  }
  return conversation(messages);
}

const LEDGER_CONSTRAINT = 'Never drop a ledger entry silently.';

describe('the fold converges for any history size', () => {
  // A 32k-window summarizer over an 866k-token session, scaled down: the window is 8,000
  // tokens, the output budget a quarter of it (resolveSummarizerSettings' clamp), the history
  // thirty times the window.
  const SMALL_WINDOW = 8000;
  const small: SummarizerSettings = { ...settings, contextWindow: SMALL_WINDOW, maxOutputTokens: 2000 };
  const sprawling = sprawlingSession(580);
  const historyTokens = estimateTokens(serializeTranscript(sprawling, small));

  it('the session used here really is thirty times the window', () => {
    expect(historyTokens).toBeGreaterThanOrEqual(30 * SMALL_WINDOW);
    expect(sprawling.length).toBeGreaterThan(1000);
  });

  it('summarises a history thirty times the window into a summary that fits, in a bounded number of calls', async () => {
    stub().setFaults({ contextWindow: SMALL_WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

    const result = await llm.summarizeMessages({ messages: sprawling, settings: small });

    const sent = requestsSince(from);
    expect(sent).toHaveLength(result.calls);
    // Every request fitted the window and was answered; none was cut off (the answers stayed
    // within the output budget), so no call was wasted.
    for (const request of sent) {
      expect(request.promptTokens + (request.maxTokens ?? 0)).toBeLessThanOrEqual(SMALL_WINDOW);
      expect(request.status).toBe(200);
    }
    expect(result.calls).toBe(result.chunks);
    // Bounded: each request carried at least a quarter of the window of new transcript (the
    // rest is instructions, bounded file lists and a running summary of at most half the output
    // budget, asked for in every request). 93 requests here.
    expect(result.calls).toBeLessThanOrEqual(Math.ceil(historyTokens / (SMALL_WINDOW / 4)));
    // Every part was asked to stay within half the output budget, and the running summary
    // carried into each request stayed below the output budget: it did not grow chunk by chunk.
    const target = Math.floor(small.maxOutputTokens * FOLD_TARGET_SHARE);
    const prompts = sent.map((r) => r.messages.at(-1)?.text ?? '');
    for (const prompt of prompts) expect(prompt).toContain(`within ${target} tokens`);
    const carried = prompts.slice(1).map((p) => estimateTokens(sentSection(p, 'previous-summary') ?? ''));
    expect(Math.max(...carried)).toBeLessThanOrEqual(small.maxOutputTokens);
    // The file lists in the prompts stayed bounded although the session touched 579 files.
    for (const prompt of prompts) {
      const files = /Files touched so far[^\n]*\n([\s\S]*?)\n\nRULES:/.exec(prompt)?.[1] ?? '';
      expect(estimateTokens(files)).toBeLessThanOrEqual(
        promptTokenBudget({ ...small, contextWindow: SMALL_WINDOW }) / 8 + 20,
      );
    }
    // A valid summary that fits the output budget, with the first constraint and the last step.
    expect(validateSummaryOutput(result.text).ok).toBe(true);
    expect(estimateTokens(result.text)).toBeLessThanOrEqual(small.maxOutputTokens);
    expect(result.text).toMatch(/^## Goal\nPort the reporting service to the new ledger API\./);
    expect(result.text).toContain(LEDGER_CONSTRAINT);
    expect(result.text).toContain('Step 579: migrate report 579');
    expect(result.usage.promptTokens).toBe(sent.reduce((sum, r) => sum + r.promptTokens, 0));
  }, 180_000);

  it('answers a cut-off summary with a smaller request, not the same one', async () => {
    // Fits one request, but the stub's summary of it (about 690 tokens) exceeds 400.
    const session = sprawlingSession(13);
    const tight: SummarizerSettings = { ...settings, contextWindow: SMALL_WINDOW, maxOutputTokens: 400 };
    stub().setFaults({ contextWindow: SMALL_WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

    const result = await llm.summarizeMessages({ messages: session, settings: tight });

    const sent = requestsSince(from);
    const prompts = sent.map((r) => r.messages.at(-1)?.text ?? '');
    // The whole range in one request, cut off; then its two halves, each asked for half the
    // output budget (no retry of the same request with a note).
    expect(sent).toHaveLength(3);
    expect(prompts[0]).not.toMatch(/LENGTH:|cut off/);
    expect(sentSection(prompts[1], 'conversation')?.length).toBeLessThan(
      sentSection(prompts[0], 'conversation')?.length ?? 0,
    );
    for (const prompt of prompts.slice(1)) expect(prompt).toContain('within 200 tokens');
    expect(sentSection(prompts[2], 'previous-summary')).toContain(LEDGER_CONSTRAINT);
    expect(result).toMatchObject({ calls: 3, chunks: 2 });
    expect(estimateTokens(result.text)).toBeLessThanOrEqual(400);
    expect(result.text).toContain(LEDGER_CONSTRAINT);
    // The cut-off answer was paid for, and is counted.
    expect(result.usage.completionTokens).toBeGreaterThanOrEqual(400 + estimateTokens(result.text));
    expect(result.usage.promptTokens).toBe(sent.reduce((sum, r) => sum + r.promptTokens, 0));
  });

  it('gives up with cut-off after a bounded number of ever smaller requests', async () => {
    // No summary of the stub's fits 60 tokens, however small the request.
    const session = sprawlingSession(13);
    const tiny: SummarizerSettings = { ...settings, contextWindow: SMALL_WINDOW, maxOutputTokens: 60 };
    stub().setFaults({ contextWindow: SMALL_WINDOW });
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

    const error = await llm.summarizeMessages({ messages: session, settings: tiny }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(InvalidSummaryError);
    const sent = requestsSince(from);
    expect(error).toMatchObject({ reason: 'cut-off', partialSummary: null });
    expect(sent).toHaveLength(1 + MAX_CUT_OFFS_IN_A_ROW);
    // Each request smaller than the one before: fewer messages, a lower (or the lowest) target.
    const sizes = sent.map((r) => sentSection(r.messages.at(-1)?.text, 'conversation')?.length ?? 0);
    for (let i = 1; i < sizes.length; i += 1) expect(sizes[i]).toBeLessThan(sizes[i - 1] ?? 0);
    const invalid = error as InvalidSummaryError;
    expect(invalid.usage.promptTokens).toBe(sent.reduce((sum, r) => sum + r.promptTokens, 0));
    expect(invalid.spent).toMatchObject({ calls: sent.length, usage: invalid.usage });
  });
});

describe('errors after paid calls say what was spent', () => {
  it('a provider error after earlier chunks carries their usage and cost', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    // Two chunks answered, then the provider fails.
    let finished = 0;
    const onFinished = (): void => {
      finished += 1;
      if (finished === 2) stub().setFaults({ contextWindow: WINDOW, status: 503 });
    };
    stub().events.on('finished', onFinished);
    const from = stub().requests.length;
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

    const error = await llm
      .summarizeMessages({ messages: session, settings: { ...settings, model: 'gpt-4o-mini' } })
      .catch((e: unknown) => e);
    stub().events.off('finished', onFinished);

    expect(error).toBeInstanceOf(LlmRetryableError);
    const paid = requestsSince(from).filter((r) => r.status === 200);
    expect(paid).toHaveLength(2);
    const spent = (error as LlmRetryableError).spent;
    expect(spent?.calls).toBe(2);
    expect(spent?.usage.promptTokens).toBe(paid.reduce((sum, r) => sum + r.promptTokens, 0));
    expect(spent?.costUsd).toBeGreaterThan(0);
  });

  it('an error before any answered request carries nothing', async () => {
    stub().setFaults({ contextWindow: WINDOW, status: 503 });
    const error = await createLlm(stubConfig(stub(), { countTokens: estimateTokens }))
      .summarizeMessages({ messages: session, settings })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRetryableError);
    expect((error as LlmRetryableError).spent).toBeUndefined();
  });
});
