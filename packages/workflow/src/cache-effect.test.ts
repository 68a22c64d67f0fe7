/**
 * Every completed compaction and every prune job records its prompt-cache effect. The sessions
 * run on claude-sonnet-4-5 (cache reads $0.30, writes $3.75 per million tokens, 5-minute TTL);
 * messages are stored with the token counts given here, so each expected value is worked out by
 * hand from them (docs/DESIGN.md, "Prompt cache").
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  prunedOutputMarkerTokens,
  type Part,
  type PolicyInput,
  type Role,
  type Usage,
} from '@compactor/core';
import { findCompaction, listPruneRuns, type NewMessage, type SessionRow } from '@compactor/db';
import { appendTestMessages, insertTestSession } from '@compactor/db/testing';
import type { Tokenizer } from '@compactor/tokenizer';
import { pruneSession } from './prune-session';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';
import { useWorkflow } from './test-support/workflow';

const w = useWorkflow();

const NOW = new Date('2026-11-27T12:00:00.000Z');
const secondsAgo = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);

function message(role: Role, parts: Part[], extra: Partial<NewMessage> = {}): NewMessage {
  return {
    id: `msg_${randomUUID()}`,
    role,
    parts,
    finish: role === 'assistant' ? 'stop' : null,
    error: null,
    usage: null,
    createdAt: secondsAgo(600),
    metadata: {},
    contentHash: randomUUID(),
    ...extra,
  };
}
const text = (tokens: number): Part => ({ type: 'text', text: `${tokens} tokens`, tokens });
const toolOutput = (callId: string, outputTokens: number): Part => ({
  type: 'tool',
  callId,
  tool: 'read',
  status: 'completed',
  input: { path: `${callId}.ts` },
  output: 'x'.repeat(outputTokens * 4),
  error: null,
  compactedAt: null,
  tokens: 5 + outputTokens,
  outputTokens,
});
/** The last model call: it read `cacheRead` tokens from the cache and wrote `cacheWrite`. */
const usage = (cacheRead: number, cacheWrite: number): Usage => ({
  input: 200,
  output: 100,
  reasoning: 0,
  cacheRead,
  cacheWrite,
});

async function anthropicSession(policy: PolicyInput, messages: NewMessage[]): Promise<SessionRow> {
  const session = await insertTestSession(w.resources.db, {
    tenantId: 'tenant-cache',
    policy,
    contextWindow: 200_000,
  });
  await w.resources.db.$client.query(`update sessions set model_id = 'claude-sonnet-4-5' where pk = $1`, [
    session.pk,
  ]);
  await appendTestMessages(w.resources.db, session.pk, messages);
  return { ...session, modelId: 'claude-sonnet-4-5' };
}

/** Every text a compaction writes counts 300 tokens, so the summary's size is known. */
const fixedCounter: Tokenizer = {
  encoding: 'o200k_base',
  countSync: () => 300,
  count: async () => 300,
} as unknown as Tokenizer;

const resources = () => ({ ...w.resources, clock: () => NOW, tokenizerFor: () => fixedCounter });

/** System prompt 2,000; two exchanges of 3,000 + 3,000; a last user message of 500: 14,500. */
async function compactedSession(lastCallAgoSeconds: number) {
  const session = await anthropicSession({ estimate: 'exact', prune: false }, [
    message('system', [text(2_000)]),
    message('user', [text(3_000)]),
    message('assistant', [text(3_000)]),
    message('user', [text(3_000)]),
    message('assistant', [text(3_000)], {
      usage: usage(13_500, 1_000),
      createdAt: secondsAgo(lastCallAgoSeconds),
    }),
    message('user', [text(500)]),
  ]);
  const { compaction } = await requestCompaction(w.resources.db, session, {
    reason: 'manual',
    strategy: 'truncate',
    keepRecentTokens: 500,
  });
  const run = await runCompaction(resources(), compaction.id, { lastAttempt: true });
  expect(run.status).toBe('completed');
  return { session, compaction: (await findCompaction(w.resources.db, compaction.id))! };
}

describe('the cache effect of a compaction', () => {
  it('invalidates what was cached past the pinned system prompt, and prices it', async () => {
    const { compaction } = await compactedSession(30);
    // Kept: the pinned 2,000, the truncate request and summary messages (300 each) and the
    // last user message (500).
    expect(compaction).toMatchObject({ tokensBefore: 14_500, tokensAfter: 3_100 });
    // Cached 14,500 (13,500 read + 1,000 written), 30 s ago: alive, the whole prompt. Only the
    // pinned 2,000 stay cached: 12,500 invalidated. Without the change the next prompt reads
    // 14,500 × 0.30 = 4,350 µ$; with it 2,000 × 0.30 + 1,100 × 3.75 = 4,725 µ$: 375 µ$ more.
    // Each later turn reads 11,400 fewer: 3,420 µ$, which repays it on the first.
    const cache = {
      invalidatedTokens: 12_500,
      rewriteCostUsd: 0.000375,
      savingPerTurnUsd: 0.00342,
      breakEvenTurns: 1,
    };
    expect(compaction).toMatchObject({
      cacheInvalidatedTokens: 12_500,
      cacheRewriteCostUsd: 0.000375,
      cacheSavingPerTurnUsd: 0.00342,
      cacheBreakEvenTurns: 1,
    });
    const completed = w.published.find((e) => e.type === 'compaction.completed');
    expect(completed?.data).toMatchObject({ cache });
    const compacted = w.published.find((e) => e.type === 'session.compacted');
    expect(compacted?.data).toMatchObject({ cache });
  });

  it('invalidates nothing when the last model call is older than the TTL', async () => {
    const { compaction } = await compactedSession(301);
    // Nothing cached: the next prompt is written whole either way, and the smaller one costs less.
    expect(compaction).toMatchObject({
      cacheInvalidatedTokens: 0,
      cacheRewriteCostUsd: 0,
      cacheSavingPerTurnUsd: 0.00342,
      cacheBreakEvenTurns: 0,
    });
  });
});

/**
 * System 1,000, user 200, an assistant turn with a 50-token text then a 3,005-token read
 * (3,000 of output), user 200, the same read again, user 200, the last answer (100): 7,760.
 * Protecting the newest 4,000 output tokens prunes the older read only.
 */
async function prunedSession(lastCallAgoSeconds: number, jobId: string) {
  const session = await anthropicSession(
    { pruning: { protectTokens: 4_000, minimumTokens: 1_000, protectUserTurns: 0 } },
    [
      message('system', [text(1_000)]),
      message('user', [text(200)]),
      message('assistant', [text(50), toolOutput('call_1', 3_000)]),
      message('user', [text(200)]),
      message('assistant', [toolOutput('call_2', 3_000)]),
      message('user', [text(200)]),
      message('assistant', [text(100)], {
        usage: usage(6_000, 1_700),
        createdAt: secondsAgo(lastCallAgoSeconds),
      }),
    ],
  );
  const outcome = await pruneSession(resources(), session.pk, { jobId, trigger: 'turn' });
  const [run] = await listPruneRuns(w.resources.db, session.pk);
  return { session, outcome, run };
}

describe('the cache effect of a prune job', () => {
  const marker = prunedOutputMarkerTokens('call_1');

  it('invalidates what was cached from the first pruned part on, and prices it', async () => {
    const { outcome, run } = await prunedSession(60, `prn_${randomUUID()}`);
    expect(outcome).toMatchObject({ parts: 1, tokens: 3_000, skipped: null });
    // The served context is unchanged up to the pruned output: 1,000 + 200 + the 50-token text
    // before it in its message = 1,250. Cached 7,700 (6,000 + 1,700), 60 s ago: 6,450 invalidated.
    // Without the change: 7,700 × 0.30 + 60 × 3.75 = 2,535 µ$. With it: 1,250 × 0.30 +
    // 3,523 × 3.75 = 13,586.25 µ$ (after: 4,760 + the 13-token marker that replaces the output):
    // 11,051.25 µ$ more. Each later turn reads 2,987 fewer: 896.1 µ$, repaid after 13 turns.
    expect(marker).toBe(13);
    const cache = {
      invalidatedTokens: 6_450,
      rewriteCostUsd: 0.01105125,
      savingPerTurnUsd: 0.0008961,
      breakEvenTurns: 13,
    };
    expect(outcome.cache).toEqual(cache);
    expect(run).toMatchObject({
      trigger: 'turn',
      tenantId: 'tenant-cache',
      parts: 1,
      tokens: 3_000,
      // The size as the provider last measured it (7,900 prompt + 100 output; nothing stored
      // since), less what the marks saved (3,000 less the marker).
      tokensBefore: 8_000,
      tokensAfter: 5_013,
      cacheInvalidatedTokens: 6_450,
      cacheRewriteCostUsd: 0.01105125,
      cacheSavingPerTurnUsd: 0.0008961,
      cacheBreakEvenTurns: 13,
      ranAt: NOW,
    });
    const event = w.published.find((e) => e.type === 'prune.completed');
    expect(event?.data).toEqual({ jobId: run!.jobId, parts: 1, tokens: 3_000, cache });
  });

  it('invalidates nothing when the last model call is older than the TTL', async () => {
    const { outcome, run } = await prunedSession(301, `prn_${randomUUID()}`);
    // Nothing cached: the same prompt would have been written whole, so no rewrite cost.
    expect(outcome.cache).toEqual({
      invalidatedTokens: 0,
      rewriteCostUsd: 0,
      savingPerTurnUsd: 0.0008961,
      breakEvenTurns: 0,
    });
    expect(run).toMatchObject({ cacheInvalidatedTokens: 0, cacheRewriteCostUsd: 0, cacheBreakEvenTurns: 0 });
  });

  it('a retried job keeps the record its first run wrote', async () => {
    const jobId = `prn_${randomUUID()}`;
    const { session } = await prunedSession(60, jobId);
    const again = await pruneSession(resources(), session.pk, { jobId, trigger: 'turn' });
    expect(again).toMatchObject({ parts: 0, cache: { invalidatedTokens: 6_450 } });
    const runs = await listPruneRuns(w.resources.db, session.pk);
    expect(runs.map((r) => [r.parts, r.cacheInvalidatedTokens])).toEqual([[1, 6_450]]);
  });
});
