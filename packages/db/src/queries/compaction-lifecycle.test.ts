import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '@compactor/testing';
import { createTestSession } from '../test-support/fixtures';
import { claimCompaction, enterStep, listCompactionSteps } from './compaction-lifecycle';
import { findCompaction, findSessionCompactions, insertCompaction } from './compactions';

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
    expect(claim.compaction).toEqual(await findCompaction(t.db, claim.compaction.id));
  });

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
