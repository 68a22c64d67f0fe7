/**
 * completeCompaction: the completion, its messages and the new view's size in one transaction;
 * the size it records is the one the session status shows next; a stale attempt writes nothing.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { EstimateMode } from '@compactor/core';
import { StaleAttemptError } from '../errors';
import { claimCompaction, enterStep, listCompactionSteps } from '../queries/compaction-lifecycle';
import { findCompaction, insertCompaction } from '../queries/compactions';
import { selectLatestLedger } from '../queries/compaction-ledgers';
import { emptyLedger } from '@compactor/core';
import { contextTokenStats, estimateFromStats } from '../queries/context-tokens';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { appendTestMessages } from '../test-support/append-test-messages';
import { completeCompaction } from './complete-compaction';
import { loadContextRows, loadHistoryPage } from './load-messages';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/** The most a report may add over the stored count (a quarter of a 4,000-token usable input). */
const CALIBRATION_CAP = 1_000;
const report = (input: number) => ({ input, output: 20, reasoning: 0, cacheRead: 0, cacheWrite: 0 });

/**
 * A session of three turns with usage reports, a compaction claimed over them, then a turn
 * appended while it ran whose report came after the covered range (it calibrates the hybrid
 * estimate whenever no summary follows it).
 */
async function claimedWithATurnMeanwhile() {
  const session = await createTestSession(t.db);
  await appendTestMessages(
    t.db,
    session.pk,
    [1, 2, 3].flatMap((i) => [
      newMessage('user', [text(`question ${i}`, 10)]),
      newMessage('assistant', [text(`answer ${i}`, 30)], { usage: report(1_000 * i) }),
    ]),
  );
  const row = await insertCompaction(t.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk: session.pk,
    reason: 'auto',
    strategy: 'summarize',
  });
  const claimed = await claimCompaction(t.db, row!.id, new Date());
  await appendTestMessages(t.db, session.pk, [
    newMessage('user', [text('meanwhile', 10)]),
    newMessage('assistant', [text('reply', 30)], { usage: report(9_000) }),
  ]);
  const stepPk = await enterStep(t.db, {
    compactionId: row!.id,
    fence: claimed!.compaction.fence,
    attempt: 1,
    step: 'finalize',
    at: new Date(),
  });
  return { session, compaction: claimed!.compaction, stepPk: stepPk! };
}

describe('completeCompaction', () => {
  it.each<[string, boolean, EstimateMode]>([
    ['with a summary, hybrid', true, 'hybrid'],
    ['with a summary, exact', true, 'exact'],
    ['without summary messages (a truncation), hybrid', false, 'hybrid'],
    ['without summary messages, exact', false, 'exact'],
  ])('records the size the status shows next (%s)', async (_name, withSummary, estimate) => {
    const { session, compaction, stepPk } = await claimedWithATurnMeanwhile();
    const summaryMessages = withSummary
      ? [newMessage('assistant', [text('the summary', 50)], { id: `${compaction.id}_summary` })]
      : [];
    const at = new Date();
    const row = await completeCompaction(t.db, {
      compactionId: compaction.id,
      fence: compaction.fence,
      sessionPk: session.pk,
      summaryMessages,
      boundarySeq: 5,
      tokensBefore: 3_100,
      messagesBefore: 6,
      estimate,
      calibrationCap: CALIBRATION_CAP,
      model: 'm',
      usage: { input: 700, output: 50 },
      costUsd: 0.0012,
      finishedAt: at,
      step: { pk: stepPk, at },
    });

    const stats = await contextTokenStats(t.db, session.pk);
    expect(row).toMatchObject({
      status: 'completed',
      step: null,
      boundarySeq: 5,
      summaryMessageIds: summaryMessages.map((m) => m.id),
      tokensBefore: 3_100,
      messagesBefore: 6,
      tokensAfter: estimateFromStats(stats, { mode: estimate, calibrationCap: CALIBRATION_CAP }),
      messagesAfter: stats.contextMessages,
      model: 'm',
      usageInput: 700,
      usageOutput: 50,
      costUsd: 0.0012,
      summaryDraft: null,
    });
    // Without a summary after it, the report appended meanwhile calibrates the hybrid estimate,
    // by at most the cap (its 9,020 against 80 stored tokens).
    if (!withSummary && estimate === 'hybrid')
      expect(row.tokensAfter).toBe(stats.storedTokens + CALIBRATION_CAP);
    const [step] = await listCompactionSteps(t.db, compaction.id);
    expect(step).toMatchObject({ step: 'finalize', status: 'completed' });
    expect(step!.detail).toEqual({
      boundarySeq: 5,
      summaryMessages: summaryMessages.length,
      tokensAfter: row.tokensAfter,
      messagesAfter: row.messagesAfter,
    });
    const history = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 100 });
    expect(history.messages.filter((m) => m.summary).map((m) => [m.id, m.compactionId])).toEqual(
      summaryMessages.map((m) => [m.id, compaction.id]),
    );
  });

  it('an attempt whose fence moved writes nothing: no messages, the row as the newer attempt left it', async () => {
    const { session, compaction } = await claimedWithATurnMeanwhile();
    const newer = await claimCompaction(t.db, compaction.id, new Date());
    const stale = await completeCompaction(t.db, {
      compactionId: compaction.id,
      fence: compaction.fence,
      sessionPk: session.pk,
      summaryMessages: [newMessage('assistant', [text('late summary', 50)], { id: `${compaction.id}_late` })],
      boundarySeq: 5,
      tokensBefore: 3_100,
      messagesBefore: 6,
      finishedAt: new Date(),
      ledger: ledgerOf(compaction.id, session.pk, 'stale'),
    }).catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(StaleAttemptError);
    expect(stale).toMatchObject({ fence: compaction.fence, currentFence: newer!.compaction.fence });
    expect(await findCompaction(t.db, compaction.id)).toMatchObject({ status: 'running', boundarySeq: null });
    const history = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 100 });
    expect(history.messages.some((m) => m.summary)).toBe(false);
    // Nor its ledger, sent in the same round trip.
    const ledgers = await t.db.execute<{ n: number }>(
      sql`select count(*)::int as n from compaction_ledgers where compaction_id = ${compaction.id}`,
    );
    expect(ledgers.rows[0]!.n).toBe(0);
  });

  it('stores the ledger with the completion, in force once it completed', async () => {
    const { session, compaction } = await claimedWithATurnMeanwhile();
    await completeCompaction(t.db, {
      compactionId: compaction.id,
      fence: compaction.fence,
      sessionPk: session.pk,
      summaryMessages: [newMessage('assistant', [text('summary', 50)], { id: `${compaction.id}_s` })],
      boundarySeq: 5,
      tokensBefore: 3_100,
      messagesBefore: 6,
      finishedAt: new Date(),
      ledger: ledgerOf(compaction.id, session.pk, 'keep the API stable'),
    });
    expect(await selectLatestLedger(t.db, session.pk)).toMatchObject({
      compactionId: compaction.id,
      unlistedConstraints: ['keep the API stable'],
    });
  });
});

function ledgerOf(compactionId: string, sessionPk: number, constraint: string) {
  return { compactionId, sessionPk, ledger: emptyLedger(), unlistedConstraints: [constraint] };
}

describe('clamps written with the completion', () => {
  /** Completes a compaction of `session` keeping everything, with these clamps. */
  async function completeWith(sessionPk: number, clamps: Parameters<typeof completeCompaction>[1]['clamps']) {
    const row = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk,
      reason: 'manual',
      strategy: 'summarize',
      status: 'running',
    });
    return completeCompaction(t.db, {
      compactionId: row!.id,
      sessionPk,
      summaryMessages: [],
      boundarySeq: 1,
      tokensBefore: 0,
      messagesBefore: 0,
      finishedAt: new Date(),
      ...(clamps ? { clamps } : {}),
    });
  }

  it('the view shows a part clamped twice with both clamps, and counts it as the latest measured it', async () => {
    const session = await createTestSession(t.db);
    const input = { path: 'big.csv', content: 'z'.repeat(4000) };
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('write it', 5)]),
      newMessage('assistant', [
        tool('w', 'row\n'.repeat(2000), { input, tokens: 3_100, outputTokens: 2_000 }),
      ]),
    ]);
    const clamp = { seq: 2, idx: 0, text: null, toolInput: null, toolError: null };
    await completeWith(session.pk, [
      { ...clamp, field: 'output', tokens: 1_150, outputTokens: 50, toolOutput: 'row\n[... clamped]' },
    ]);
    await completeWith(session.pk, [
      {
        ...clamp,
        field: 'input',
        tokens: 120,
        outputTokens: 50,
        toolOutput: null,
        toolInput: { path: 'big.csv', content: 'z[...]' },
      },
    ]);

    const { messages } = await loadContextRows(t.db, session.pk);
    const part = messages.find((m) => m.seq === 2)!.parts[0]!;
    expect(part).toMatchObject({
      output: 'row\n[... clamped]',
      input: { path: 'big.csv', content: 'z[...]' },
      tokens: 120,
      outputTokens: 50,
    });
    const stats = await contextTokenStats(t.db, session.pk);
    expect(stats.storedTokens).toBe(5 + 120);
    // The raw history keeps the part whole.
    const raw = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 });
    expect(raw.messages.find((m) => m.seq === 2)!.parts[0]).toMatchObject({ input, tokens: 3_100 });
  });
});
