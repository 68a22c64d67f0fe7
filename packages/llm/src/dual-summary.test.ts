import { buildSummaryMessages, estimateTokens } from '@compactor/core';
import { assistant, conversation, text, toolCall, user } from '@compactor/core/testing';
import { describe, expect, it, vi } from 'vitest';
import type { SummarizerSettings } from './chunked-summary';
import { InvalidSummaryError, LlmAbortedError, LlmOverflowError, LlmRetryableError } from './errors';
import { createLlm } from './llm';
import { stubConfig, useLlmStub } from './test-support/stub';

const stub = useLlmStub();

const settings: SummarizerSettings = {
  model: 'stub-summarizer',
  maxOutputTokens: 1000,
  // Short enough that a sequential implementation would fail at the barrier, not hang the run.
  timeoutMs: 5_000,
  contextWindow: null,
  toolResultMaxChars: 2000,
  toolArgsMaxChars: 1000,
};

const history = conversation([
  user('Set up CI for the monorepo. Only use GitHub Actions.'),
  assistant([
    text('Creating the workflow.'),
    toolCall('write', { path: '.github/workflows/ci.yml' }, 'written'),
  ]),
]);
const turnPrefix = conversation(
  [
    user('Now make the tests run in parallel shards.'),
    assistant([
      text('Reading the vitest config.'),
      toolCall('read', { path: 'vitest.config.ts' }, 'export default {}'),
    ]),
    assistant([
      text('Trying four shards.'),
      toolCall('bash', { command: 'npx vitest --shard=1/4' }, 'Error: unknown option', 'error'),
    ]),
    assistant([
      text('Checking the version.'),
      toolCall('bash', { command: 'npx vitest --version' }, 'vitest/1.0.0'),
    ]),
    assistant([
      text('Version 1 has no sharding; upgrading.'),
      toolCall('edit', { path: 'package.json' }, 'ok'),
    ]),
  ],
  3,
);

/** A history that needs several chunks in a 6,000-token window. */
const longHistory = conversation(
  Array.from({ length: 30 }, (_, i) => [
    user(`Step ${i}: set up job ${i}. Only use GitHub Actions.`),
    assistant([text(`Job ${i}.`), toolCall('read', { path: `ci/job-${i}.yml` }, 'steps: []\n'.repeat(60))]),
  ]).flat(),
);

const llm = () => createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

describe('summarizeSplitTurn', () => {
  it('requests both summaries concurrently and joins them', async () => {
    // The stub holds each request until two are waiting together: only concurrent calls pass.
    stub().setFaults({ barrier: 2 });
    const from = stub().requests.length;

    const result = await llm().summarizeSplitTurn({
      history: { messages: history },
      turnPrefix: { messages: turnPrefix },
      settings,
    });

    expect(
      stub()
        .requests.slice(from)
        .map((r) => r.status),
    ).toEqual([200, 200]);
    expect(stub().stats.maxInFlight).toBeGreaterThanOrEqual(2);
    expect(result.historySummary).toMatch(/^## Goal\nSet up CI for the monorepo/);
    expect(result.turnPrefixSummary).toMatch(
      /^## Original Request\nNow make the tests run in parallel shards\./,
    );
    expect(result.text).toBe(
      `${result.historySummary}\n\n---\n\n## Turn Context (split turn)\n\n${result.turnPrefixSummary}`,
    );
    expect(result).toMatchObject({ calls: 2, chunks: 2 });
    expect(result.usage.promptTokens).toBe(
      stub()
        .requests.slice(from)
        .reduce((sum, r) => sum + r.promptTokens, 0),
    );
  });

  // What core's planner gives when the split turn starts right after the previous compaction:
  // a history made of the previous summary's messages only.
  const previousSummaryMessages = buildSummaryMessages({
    style: 'opencode',
    summaryText: '## Goal\nEarlier work.',
    compactionId: 'c1',
    auto: true,
    messagesCompacted: 12,
    createdAt: '2025-01-01T00:00:00Z',
  }).map((m, i) => ({ ...m, seq: 100 + i }));

  it.each([
    ['read from the summary messages', undefined],
    ['given as the workflow extracts it', '## Goal\nEarlier work.'],
  ])(
    'a history of only the previous summary costs no call: it is the history half unchanged (%s)',
    async (_name, previousSummary) => {
      const from = stub().requests.length;
      const result = await llm().summarizeSplitTurn({
        history: {
          messages: previousSummaryMessages,
          ...(previousSummary === undefined ? {} : { previousSummary }),
        },
        turnPrefix: { messages: turnPrefix },
        settings,
      });
      const sent = stub().requests.slice(from);
      expect(sent).toHaveLength(1);
      expect(sent[0]?.messages.at(-1)?.text).toMatch(/## Original Request/);
      expect(result.historySummary).toBe('## Goal\nEarlier work.');
      expect(result.text).toMatch(
        /^## Goal\nEarlier work\.\n\n---\n\n## Turn Context \(split turn\)\n\n## Original Request/,
      );
      expect(result).toMatchObject({ calls: 1, chunks: 1 });
    },
  );

  it('merges new history into the previous summary', async () => {
    const from = stub().requests.length;
    const result = await llm().summarizeSplitTurn({
      history: { messages: [...previousSummaryMessages, ...history] },
      turnPrefix: { messages: turnPrefix },
      settings,
    });
    const historyRequest = stub()
      .requests.slice(from)
      .find((r) => r.messages.at(-1)?.text.includes('<previous-summary>'));
    expect(historyRequest?.messages.at(-1)?.text).toContain(
      '<previous-summary>\n## Goal\nEarlier work.\n</previous-summary>',
    );
    expect(result.calls).toBe(2);
  });

  it('skips the history half when there is no history at all', async () => {
    const from = stub().requests.length;
    const result = await llm().summarizeSplitTurn({
      history: { messages: [] },
      turnPrefix: { messages: turnPrefix },
      settings,
    });
    expect(stub().requests.length - from).toBe(1);
    expect(result.historySummary).toBeNull();
    expect(result.text).toMatch(/^## Turn Context \(split turn\)\n\n## Original Request/);
  });

  it('an invalid turn-prefix summary carries no partial summary of other messages', async () => {
    stub().setFaults({ output: 'empty' });
    const error = await llm()
      .summarizeSplitTurn({
        history: { messages: previousSummaryMessages },
        turnPrefix: { messages: turnPrefix },
        settings,
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidSummaryError);
    expect(error).toMatchObject({ reason: 'empty', partialSummary: null });
  });

  it('cancels both requests through the signal', async () => {
    stub().setFaults({ barrier: 3 });
    const from = stub().requests.length;
    const controller = new AbortController();
    const pending = llm()
      .summarizeSplitTurn({
        history: { messages: history },
        turnPrefix: { messages: turnPrefix },
        settings,
        signal: controller.signal,
      })
      .catch((e: unknown) => e);
    await stub().waitForRequests(from + 2);
    controller.abort();
    expect(await pending).toBeInstanceOf(LlmAbortedError);
    await vi.waitFor(() =>
      expect(
        stub()
          .requests.slice(from)
          .map((r) => r.clientClosed),
      ).toEqual([true, true]),
    );
  });

  it('cancels the other request when one fails', async () => {
    // The stub rejects a prompt over its window at once, and holds every other request.
    stub().setFaults({ contextWindow: 6000, latencyMs: 60_000 });
    const from = stub().requests.length;
    const error = await llm()
      .summarizeSplitTurn({
        // A previous summary far larger than the window makes the history half overflow.
        history: { messages: history, previousSummary: `## Goal\n${'an enormous summary '.repeat(3000)}` },
        turnPrefix: { messages: turnPrefix },
        settings,
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmOverflowError);
    // The turn-prefix request, held by the stub, was cancelled rather than left running.
    await vi.waitFor(() => expect(stub().stats.inFlight).toBe(0));
    const sent = stub().requests.slice(from);
    expect(sent.some((r) => r.status === 400)).toBe(true);
    expect(sent.filter((r) => r.status !== 400).every((r) => r.clientClosed)).toBe(true);
  });

  it('a failure after paid requests carries what both halves spent', async () => {
    // The history's first chunk and the turn prefix are held together and answered, then the
    // provider fails the history's second chunk.
    // A history of several chunks (known window); its first chunk and the turn prefix are held
    // together and answered, then the provider fails the history's second chunk.
    stub().setFaults({ barrier: 2 });
    let finished = 0;
    const onFinished = (): void => {
      finished += 1;
      if (finished === 2) stub().setFaults({ status: 500 });
    };
    stub().events.on('finished', onFinished);
    const from = stub().requests.length;

    const error = await llm()
      .summarizeSplitTurn({
        history: { messages: longHistory },
        turnPrefix: { messages: turnPrefix },
        settings: { ...settings, model: 'gpt-4o-mini', contextWindow: 6000 },
      })
      .catch((e: unknown) => e);
    stub().events.off('finished', onFinished);

    expect(error).toBeInstanceOf(LlmRetryableError);
    const sent = stub().requests.slice(from);
    const paid = sent.filter((r) => r.status === 200);
    expect(paid).toHaveLength(2);
    expect(paid.some((r) => r.messages.at(-1)?.text.includes('## Original Request'))).toBe(true);
    // The history half's answered chunk and the finished turn-prefix half, both paid for.
    const spent = (error as LlmRetryableError).spent;
    expect(spent?.calls).toBe(2);
    expect(spent?.usage.promptTokens).toBe(paid.reduce((sum, r) => sum + r.promptTokens, 0));
    expect(spent?.costUsd).toBeGreaterThan(0);
  });

  it("an invalid history half's usage includes the turn-prefix half that finished", async () => {
    // As above, but the history's second chunk comes back empty twice.
    stub().setFaults({ barrier: 2 });
    let finished = 0;
    const onFinished = (): void => {
      finished += 1;
      if (finished === 2) stub().setFaults({ output: 'empty' });
    };
    stub().events.on('finished', onFinished);
    const from = stub().requests.length;

    const error = await llm()
      .summarizeSplitTurn({
        history: { messages: longHistory },
        turnPrefix: { messages: turnPrefix },
        settings: { ...settings, contextWindow: 6000 },
      })
      .catch((e: unknown) => e);
    stub().events.off('finished', onFinished);

    expect(error).toBeInstanceOf(InvalidSummaryError);
    const invalid = error as InvalidSummaryError;
    expect(invalid.reason).toBe('empty');
    // The history's first chunk is still handed to the truncate fallback.
    expect(invalid.partialSummary).toMatch(/^## Goal\nStep 0: set up job 0\./);
    const sent = stub().requests.slice(from);
    expect(sent).toHaveLength(4); // history chunk 1 and the turn prefix, then chunk 2 twice
    expect(invalid.usage.promptTokens).toBe(sent.reduce((sum, r) => sum + r.promptTokens, 0));
    expect(invalid.spent?.calls).toBe(4);
  });
});
