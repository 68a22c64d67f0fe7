import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { completeCompaction } from '../operations/complete-compaction';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { claimCompaction, enterStep, listCompactionSteps } from './compaction-lifecycle';
import { findCompaction, findSessionCompactions, insertCompaction } from './compactions';
import { contextTokenStats } from './context-tokens';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

async function claimed() {
  const session = await createTestSession(t.db);
  const compaction = await insertCompaction(t.db, {
    id: `cmp_${session.pk}`,
    sessionPk: session.pk,
    reason: 'manual',
    strategy: 'summarize',
  });
  const claim = await claimCompaction(t.db, compaction!.id, new Date('2026-01-01T00:00:00Z'));
  return { session, claim: claim! };
}

describe('claimCompaction', () => {
  it('starts an attempt and returns its session in the same round trip', async () => {
    const { session, claim } = await claimed();
    expect(claim.compaction).toMatchObject({
      status: 'running',
      attempts: 1,
      fence: 1,
      sessionPk: session.pk,
    });
    expect(claim.compaction.startedAt).toEqual(new Date('2026-01-01T00:00:00Z'));
    expect(claim.compaction.coversThroughSeq).toBe(session.lastSeq);
    // Typed like drizzle's own rows: the same object a plain select returns.
    expect(claim.session).toEqual(session);
    expect(claim.latestCompleted).toBeNull();
    expect(claim.compaction).toEqual(await findCompaction(t.db, claim.compaction.id));
  });

  it.each([true, false])(
    'measures the context view in the same statement, as contextTokenStats does (pinSystemMessages %s)',
    async (pinSystemMessages) => {
      // A view with everything the stats read: a pinned system message before a boundary, an
      // earlier compaction's summary, tool outputs, and a usage report after the summary.
      const session = await createTestSession(t.db);
      const usage = (input: number) => ({ input, output: 20, reasoning: 0, cacheRead: 0, cacheWrite: 0 });
      await appendTestMessages(t.db, session.pk, [
        newMessage('system', [text('you are a coding agent', 12)]),
        ...[1, 2, 3].flatMap((i) => [
          newMessage('user', [text(`question ${i}`, 10)]),
          newMessage('assistant', [tool(`call_${i}`, 'output '.repeat(200))], { usage: usage(1_000 * i) }),
        ]),
      ]);
      const first = await insertCompaction(t.db, {
        id: `cmp_first_${session.pk}`,
        sessionPk: session.pk,
        reason: 'manual',
        strategy: 'summarize',
      });
      const firstClaim = await claimCompaction(t.db, first!.id, new Date());
      await completeCompaction(t.db, {
        compactionId: first!.id,
        fence: firstClaim!.compaction.fence,
        sessionPk: session.pk,
        summaryMessages: [newMessage('assistant', [text('the summary', 40)], { id: `${first!.id}_summary` })],
        boundarySeq: 6,
        tokensBefore: 3_000,
        messagesBefore: 7,
        finishedAt: new Date(),
      });
      await appendTestMessages(t.db, session.pk, [
        newMessage('user', [text('next question', 10)]),
        newMessage('assistant', [tool('call_4', 'more output '.repeat(100))], { usage: usage(2_500) }),
      ]);
      const second = await insertCompaction(t.db, {
        id: `cmp_second_${session.pk}`,
        sessionPk: session.pk,
        reason: 'manual',
        strategy: 'summarize',
      });
      const expected = await contextTokenStats(t.db, session.pk, { pinSystemMessages });
      // The pinned system message is what tells the two apart.
      const otherwise = await contextTokenStats(t.db, session.pk, { pinSystemMessages: !pinSystemMessages });
      expect(otherwise.contextMessages).not.toBe(expected.contextMessages);

      const claim = await claimCompaction(t.db, second!.id, new Date(), { stats: { pinSystemMessages } });

      expect(claim!.compaction).toMatchObject({ status: 'running', attempts: 1 });
      // The view's boundary comes with it: the latest completed compaction, as a plain read finds it.
      expect(claim!.latestCompleted).toEqual(await findCompaction(t.db, first!.id));
      expect(claim!.stats).toEqual(expected);
      expect(claim!.stats!.report).not.toBeNull();
      expect(claim!.stats!.unprunedOutputs.total).toBeGreaterThan(0);
      // Without the option the claim measures nothing.
      expect((await claimCompaction(t.db, second!.id, new Date()))!.stats).toBeUndefined();
    },
  );

  it('returns null for a compaction that is not active', async () => {
    const { claim } = await claimed();
    await t.db.execute(`update compactions set status = 'completed' where id = '${claim.compaction.id}'`);
    expect(await claimCompaction(t.db, claim.compaction.id, new Date())).toBeNull();
  });
});

describe('enterStep', () => {
  it('closes the previous record, writes the fenced columns and opens the next record in one statement', async () => {
    const { claim } = await claimed();
    const { id, fence } = claim.compaction;
    const at = new Date('2026-01-01T00:00:01Z');
    const prune = await enterStep(t.db, {
      compactionId: id,
      fence,
      attempt: 1,
      step: 'prune',
      at,
      patch: { tokensBefore: 900, messagesBefore: 12 },
    });
    const summarize = await enterStep(t.db, {
      compactionId: id,
      fence,
      attempt: 1,
      step: 'summarize',
      at: new Date('2026-01-01T00:00:02Z'),
      patch: { prunedParts: 3, prunedTokens: 400, summaryDraft: { version: 1, text: 'ünïcode ✓' } },
      finish: { pk: prune!, detail: { parts: 3 } },
    });
    expect(summarize).toBeGreaterThan(prune!);
    expect(await findCompaction(t.db, id)).toMatchObject({
      step: 'summarize',
      tokensBefore: 900,
      messagesBefore: 12,
      prunedParts: 3,
      prunedTokens: 400,
      summaryDraft: { version: 1, text: 'ünïcode ✓' },
    });
    const steps = await listCompactionSteps(t.db, id);
    expect(steps.map((s) => [s.step, s.status, s.detail])).toEqual([
      ['prune', 'completed', { parts: 3 }],
      ['summarize', 'running', {}],
    ]);
    expect(steps[0]!.finishedAt).toEqual(new Date('2026-01-01T00:00:02Z'));
  });

  it('records a step that passed without a statement before the one it enters, in the same statement', async () => {
    const { claim } = await claimed();
    const { id, fence } = claim.compaction;
    const at = new Date('2026-01-01T00:00:03Z');
    // The prune began when the attempt started sizing the context, 45 ms before.
    const pruneStarted = new Date('2026-01-01T00:00:02.955Z');
    const summarize = await enterStep(t.db, {
      compactionId: id,
      fence,
      attempt: 1,
      step: 'summarize',
      at,
      patch: { tokensBefore: 900, messagesBefore: 12 },
      passed: { step: 'prune', detail: { parts: 0, skipped: 'too-little-output' }, startedAt: pruneStarted },
    });
    const steps = await listCompactionSteps(t.db, id);
    expect(steps.map((s) => [s.step, s.status, s.detail, s.startedAt, s.finishedAt])).toEqual([
      ['prune', 'completed', { parts: 0, skipped: 'too-little-output' }, pruneStarted, at],
      ['summarize', 'running', {}, at, null],
    ]);
    expect(steps[1]!.pk).toBe(summarize);
    expect(await findCompaction(t.db, id)).toMatchObject({ step: 'summarize', tokensBefore: 900 });

    // A superseded attempt records neither.
    await claimCompaction(t.db, id, new Date());
    const stale = await enterStep(t.db, {
      compactionId: id,
      fence,
      attempt: 1,
      step: 'summarize',
      at,
      passed: { step: 'prune', detail: {}, startedAt: at },
    });
    expect(stale).toBeNull();
    expect(await listCompactionSteps(t.db, id)).toHaveLength(2);
  });

  it('writes nothing fenced and opens no record for a superseded attempt (null)', async () => {
    const { claim } = await claimed();
    const { id, fence } = claim.compaction;
    await claimCompaction(t.db, id, new Date());
    const entered = await enterStep(t.db, {
      compactionId: id,
      fence,
      attempt: 1,
      step: 'summarize',
      at: new Date(),
      patch: { prunedParts: 7 },
    });
    expect(entered).toBeNull();
    expect(await findCompaction(t.db, id)).toMatchObject({ step: null, prunedParts: 0, fence: fence + 1 });
    expect(await listCompactionSteps(t.db, id)).toEqual([]);
  });
});

describe('findSessionCompactions', () => {
  it('finds the active, the last finished and the latest completed compaction in one statement', async () => {
    const { session, claim } = await claimed();
    const finish = (id: string, status: string, at: string) =>
      t.db.execute(`update compactions set status = '${status}', finished_at = '${at}' where id = '${id}'`);
    await finish(claim.compaction.id, 'completed', '2026-01-01T00:00:00Z');
    const failed = await insertCompaction(t.db, {
      id: 'cmp_failed',
      sessionPk: session.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    await finish(failed!.id, 'failed', '2026-01-02T00:00:00Z');
    expect(await findSessionCompactions(t.db, session.pk)).toMatchObject({
      active: null,
      lastFinished: { id: 'cmp_failed', status: 'failed' },
      latestCompleted: { id: claim.compaction.id, status: 'completed' },
    });
    await insertCompaction(t.db, {
      id: 'cmp_active',
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
    });
    const found = await findSessionCompactions(t.db, session.pk);
    expect(found.active).toEqual(await findCompaction(t.db, 'cmp_active'));
    expect(found.latestCompleted).toEqual(await findCompaction(t.db, claim.compaction.id));
  });

  it('finds none for a session without compactions', async () => {
    const session = await createTestSession(t.db);
    expect(await findSessionCompactions(t.db, session.pk)).toEqual({
      active: null,
      lastFinished: null,
      latestCompleted: null,
    });
  });
});
