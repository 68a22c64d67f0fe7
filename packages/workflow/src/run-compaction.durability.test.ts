import { afterEach, describe, expect, it } from 'vitest';
import type { PolicyInput } from '@compactor/core';
import { findCompaction, listCompactionSteps, updateSession } from '@compactor/db';
import { createLlm } from '@compactor/llm';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { crashingAtFinalize } from './test-support/crash';
import { useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();
// A failed assertion must not leave the stub's faults set for the next test.
afterEach(() => w.stub.setFaults({}));

describe('pay the LLM once', () => {
  it('a retry after a crash past the LLM call finalizes the saved draft without calling it again', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 4 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    // The first attempt loses its database connection as finalize starts (its pipelined
    // round trip, on a connection of its own from the pool, is the first thing finalize does
    // and the only one of the attempt).
    const crashing = crashingAtFinalize(w.resources);
    await expect(runCompaction(crashing, compaction.id, { lastAttempt: false })).rejects.toThrow(
      /terminated/,
    );
    const paid = w.stub.stats.requests;
    expect(paid).toBeGreaterThan(0);
    const interrupted = await findCompaction(w.resources.db, compaction.id);
    expect(interrupted).toMatchObject({ status: 'running', step: 'finalize' });
    expect(interrupted?.summaryDraft).toMatchObject({ version: 2, outcome: { writtenBy: 'llm' } });

    const retried = await runCompaction(w.resources, compaction.id, { lastAttempt: false });
    expect(retried.status).toBe('completed');
    expect(w.stub.stats.requests).toBe(paid);
    expect(retried.compaction).toMatchObject({ attempts: 2, model: 'stub-summarizer' });
    expect(retried.compaction?.usageInput).toBeGreaterThan(0);
  });

  it('records what failed summarizer calls cost when it falls back to truncation', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 4 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    w.stub.setFaults({ output: 'empty' });
    // Priced, so the row can say what the unusable answers cost (USD per million tokens).
    const priced = createLlm({
      apiKey: 'stub',
      baseURL: w.stub.url,
      timeoutMs: 10_000,
      prices: { 'stub-summarizer': { input: 1, output: 2 } },
    });
    const result = await runCompaction({ ...w.resources, llm: priced }, compaction.id, { lastAttempt: true });
    w.stub.setFaults({});
    expect(result.compaction).toMatchObject({ status: 'completed', details: { writtenBy: 'truncate' } });
    expect(result.compaction?.details).toMatchObject({ fallback: { code: 'invalid_summary' } });
    expect(result.compaction?.model).toBe('stub-summarizer');
    const { usageInput, usageOutput, costUsd } = result.compaction!;
    expect(usageInput).toBeGreaterThan(0);
    expect(costUsd).toBeCloseTo((usageInput! * 1 + (usageOutput ?? 0) * 2) / 1e6, 6);
    expect(costUsd).toBeGreaterThan(0);
  });
});

describe('defects fixed on the way', () => {
  it('a stored policy that no longer resolves ends the compaction failed, not running forever', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 2 }));
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    await updateSession(w.resources.db, session.pk, { policy: { preset: 'no-such-preset' } });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: false });
    expect(result.status).toBe('failed');
    expect(result.compaction).toMatchObject({ status: 'failed', errorCode: 'invalid_policy' });
  });

  it("no step record carries the request's instructions or the summary text", async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 4 }));
    const secret = 'focus on the SECRET-PROJECT-NAME rollout';
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      instructions: secret,
    });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    const steps = await listCompactionSteps(w.resources.db, compaction.id);
    expect(steps.map((s) => s.step)).toEqual(['prune', 'summarize', 'finalize']);
    const recorded = JSON.stringify(steps.map((s) => s.detail));
    expect(recorded).not.toContain('SECRET-PROJECT-NAME');
    expect(recorded).not.toContain('## '); // no summary sections either
    expect(steps.at(-1)?.detail).toMatchObject({ boundarySeq: result.compaction?.boundarySeq });
  });
});

describe('the prune step', () => {
  it('sends no statement when the view holds too little tool output to prune, and prunes when it holds enough', async () => {
    const outputs = async (policy?: PolicyInput) => {
      const session = await w.seedSession(generateCodingSession({ turns: 8 }), policy ? { policy } : {});
      const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
      const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
      expect(result.status).toBe('completed');
      const [prune] = await listCompactionSteps(w.resources.db, compaction.id);
      return { row: result.compaction!, prune: prune! };
    };
    // OpenCode's budgets (protect 40,000, more than 20,000 saved): this session's outputs are far
    // below them, so the first attempt's view stats (core pruneCouldSelect) skip the statement.
    const small = await outputs();
    expect(small.prune).toMatchObject({ step: 'prune', status: 'completed' });
    expect(small.prune.detail).toEqual({
      parts: 0,
      tokens: 0,
      candidateTokens: null,
      skipped: 'too-little-output',
    });
    expect(small.row).toMatchObject({ prunedParts: 0, prunedTokens: 0 });
    // With budgets the same outputs exceed, the selection runs and marks.
    const large = await outputs({ pruning: { protectTokens: 1_000, minimumTokens: 1_000 } });
    expect(large.prune.detail).toMatchObject({ skipped: null, parts: large.row.prunedParts });
    expect(large.row.prunedParts).toBeGreaterThan(0);
  });
});

describe('the summarize step after the prune step', () => {
  it('the summarizer sees the outputs this attempt pruned as cleared, exactly as a reload would', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 8 }), {
      policy: { pruning: { protectTokens: 1_000, minimumTokens: 1_000 } },
    });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const before = w.stub.requests.length;
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.compaction?.prunedParts).toBeGreaterThan(0);
    const prompts = w.stub.requests
      .slice(before)
      .flatMap((r) => r.messages.map((m) => m.text))
      .join('\n');
    expect(prompts).toMatch(/\[Old tool result content cleared — recall [^\]\n]+\]/);
  });
});
