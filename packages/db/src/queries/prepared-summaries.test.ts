import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { outbox } from '../schema';
import { createTestSession } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { markCoveredChange } from './covered-changes';
import {
  beginPreparedSummary,
  DRAFT_JOB_LOST,
  endPreparedSummary,
  failPreparedSummaries,
  findPreparedSummary,
  requestPreparedSummary,
  savePreparedSummary,
  type PreparedSummaryWrite,
} from './prepared-summaries';

const t = useTestDatabase();

const request = (sessionPk: number, id: string, baseCompactionId: string | null) =>
  requestPreparedSummary(t.db, { sessionPk, id, baseCompactionId, headroomTokens: 0, jobName: 'prepare' });
const draft = (cutSeq: number): PreparedSummaryWrite => ({
  settingsKey: 'k',
  cutSeq,
  outcome: { version: 2 },
  model: 'summarizer',
  usageInput: 1_200,
  usageOutput: 300,
  costUsd: 0.0042,
  preparedAt: new Date('2026-01-01T00:00:00Z'),
});
const jobsFor = async (id: string) => t.db.select().from(outbox).where(eq(outbox.jobId, id));

describe('requestPreparedSummary: one request per session and boundary', () => {
  it('writes the request and its outbox entry in one statement', async () => {
    const session = await createTestSession(t.db);
    const entry = await request(session.pk, 'prp_1', null);
    expect(entry).toMatchObject({
      jobName: 'prepare',
      jobId: 'prp_1',
      payload: { sessionPk: session.pk, draftId: 'prp_1' },
      dispatchedAt: null,
    });
    expect(await jobsFor('prp_1')).toHaveLength(1);
    expect(await findPreparedSummary(t.db, session.pk)).toMatchObject({
      id: 'prp_1',
      status: 'pending',
      baseCompactionId: null,
    });
  });

  it('asks nothing more on the same boundary, whatever the first one became', async () => {
    const session = await createTestSession(t.db);
    await request(session.pk, 'prp_a', 'cmp_1');
    expect(await request(session.pk, 'prp_b', 'cmp_1')).toBeNull();
    await endPreparedSummary(t.db, session.pk, 'prp_a', 'failed', 'llm_retries_exhausted');
    expect(await request(session.pk, 'prp_c', 'cmp_1')).toBeNull();
    expect(await jobsFor('prp_b')).toEqual([]);
    expect(await jobsFor('prp_c')).toEqual([]);
    expect((await findPreparedSummary(t.db, session.pk))?.id).toBe('prp_a');
  });

  it('asks again on the same boundary once the reconciler retired the request as lost', async () => {
    const session = await createTestSession(t.db);
    await request(session.pk, 'prp_lost', 'cmp_1');
    await beginPreparedSummary(t.db, session.pk, 'prp_lost', 10);
    expect(await endPreparedSummary(t.db, session.pk, 'prp_lost', 'failed', DRAFT_JOB_LOST)).toBe(true);
    // Ending it twice (two passes, or the job itself) ends nothing more.
    expect(await endPreparedSummary(t.db, session.pk, 'prp_lost', 'failed', 'llm_retries_exhausted')).toBe(
      false,
    );
    expect(await findPreparedSummary(t.db, session.pk)).toMatchObject({
      status: 'failed',
      errorCode: DRAFT_JOB_LOST,
    });

    const entry = await request(session.pk, 'prp_again', 'cmp_1');
    expect(entry).toMatchObject({ jobId: 'prp_again', payload: { draftId: 'prp_again' } });
    expect(await findPreparedSummary(t.db, session.pk)).toMatchObject({
      id: 'prp_again',
      status: 'pending',
      baseCompactionId: 'cmp_1',
      coversThroughSeq: null,
      errorCode: null,
    });
    // The lost job, should it ever run, writes nothing; and the new request fires once.
    expect(await savePreparedSummary(t.db, session.pk, 'prp_lost', draft(5))).toBe(false);
    expect(await request(session.pk, 'prp_third', 'cmp_1')).toBeNull();
  });

  it('retires many pending requests in one statement, leaving written and replaced ones alone', async () => {
    const [lost, written, replaced] = [
      await createTestSession(t.db),
      await createTestSession(t.db),
      await createTestSession(t.db),
    ];
    await request(lost.pk, 'prp_m_lost', null);
    await request(written.pk, 'prp_m_written', null);
    await savePreparedSummary(t.db, written.pk, 'prp_m_written', draft(4));
    await request(replaced.pk, 'prp_m_old', null);
    await request(replaced.pk, 'prp_m_new', 'cmp_9');
    const retired = await failPreparedSummaries(
      t.db,
      [
        { sessionPk: lost.pk, id: 'prp_m_lost' },
        { sessionPk: written.pk, id: 'prp_m_written' },
        { sessionPk: replaced.pk, id: 'prp_m_old' },
      ],
      DRAFT_JOB_LOST,
    );
    expect(retired).toEqual(['prp_m_lost']);
    expect(await findPreparedSummary(t.db, lost.pk)).toMatchObject({
      status: 'failed',
      errorCode: DRAFT_JOB_LOST,
    });
    expect(await findPreparedSummary(t.db, written.pk)).toMatchObject({ status: 'ready', errorCode: null });
    expect(await findPreparedSummary(t.db, replaced.pk)).toMatchObject({
      id: 'prp_m_new',
      status: 'pending',
    });
    expect(await failPreparedSummaries(t.db, [], DRAFT_JOB_LOST)).toEqual([]);
  });

  it('replaces the request once a compaction moved the boundary: the old job is fenced out', async () => {
    const session = await createTestSession(t.db);
    await request(session.pk, 'prp_old', null);
    expect(await beginPreparedSummary(t.db, session.pk, 'prp_old', 10)).not.toBeNull();
    expect(await request(session.pk, 'prp_new', 'cmp_1')).not.toBeNull();
    expect(await findPreparedSummary(t.db, session.pk)).toMatchObject({
      id: 'prp_new',
      status: 'pending',
      baseCompactionId: 'cmp_1',
      coversThroughSeq: null,
    });
    expect(await savePreparedSummary(t.db, session.pk, 'prp_old', draft(5))).toBe(false);
    expect(await beginPreparedSummary(t.db, session.pk, 'prp_old', 12)).toBeNull();
    expect((await findPreparedSummary(t.db, session.pk))?.status).toBe('pending');
  });

  it('replaces a ready draft whose summarised messages changed, not one changed after its cut', async () => {
    const session = await createTestSession(t.db);
    await request(session.pk, 'prp_r', null);
    await beginPreparedSummary(t.db, session.pk, 'prp_r', 30);
    expect(await savePreparedSummary(t.db, session.pk, 'prp_r', draft(20))).toBe(true);
    await markCoveredChange(t.db, session.pk, 25);
    expect(await request(session.pk, 'prp_s', null)).toBeNull();
    await markCoveredChange(t.db, session.pk, 19);
    expect((await findPreparedSummary(t.db, session.pk))?.changedSeq).toBe(19);
    expect(await request(session.pk, 'prp_s', null)).not.toBeNull();
  });
});

describe('a prepare job on its request', () => {
  it('clears the change mark when it begins reading, and stores the draft with its spend', async () => {
    const session = await createTestSession(t.db);
    await request(session.pk, 'prp_w', null);
    await markCoveredChange(t.db, session.pk, 3);
    const begun = await beginPreparedSummary(t.db, session.pk, 'prp_w', 40);
    expect(begun).toMatchObject({ changedSeq: null, coversThroughSeq: 40 });
    // A PATCH while the summarizer writes marks it again.
    await markCoveredChange(t.db, session.pk, 7);
    expect(await savePreparedSummary(t.db, session.pk, 'prp_w', draft(31))).toBe(true);
    expect(await findPreparedSummary(t.db, session.pk)).toMatchObject({
      status: 'ready',
      cutSeq: 31,
      changedSeq: 7,
      model: 'summarizer',
      usageInput: 1_200,
      usageOutput: 300,
      costUsd: 0.0042,
      outcome: { version: 2 },
    });
    // Written once: a second save (a retried job) writes nothing.
    expect(await savePreparedSummary(t.db, session.pk, 'prp_w', draft(25))).toBe(false);
  });

  it('goes with its session', async () => {
    const session = await createTestSession(t.db);
    await request(session.pk, 'prp_gone', null);
    await t.db.execute(sql`delete from sessions where pk = ${session.pk}`);
    expect(await findPreparedSummary(t.db, session.pk)).toBeNull();
  });
});
