/**
 * What an append starts after it is written (`afterWrite`), at the package's boundary on real
 * Postgres and real queues: the status it answers, the auto compaction a crossing starts once,
 * the emergency a silent overflow starts, nothing with auto off, the wait at the tenant's cap,
 * and the finished turn's prune.
 */
import { describe, expect, it } from 'vitest';
import { findDeferredCompaction, type SessionRow } from '@compactor/db';
import { SessionMessages } from './messages';
import { TenantLimits } from './tenant-limits';
import { countCompactionsOf } from './test-support/counts';
import {
  finishedTurn,
  newSession,
  parsedMessages,
  useTestSessions,
  userText,
} from './test-support/session-resources';

const t = useTestSessions();

const append = (id: string, messages: unknown[], writer = t.messages) =>
  writer.append({ tenantId: 'tenant-a', id }, parsedMessages(messages), t.log);
const question = { role: 'user', parts: [{ type: 'text', text: 'next?' }] };

/** A turn that read a file: `lines` lines of output, about 7 tokens each. */
const toolTurn = (lines: number, id?: string) => ({
  ...(id ? { id } : {}),
  role: 'assistant',
  parts: [
    {
      type: 'tool',
      callId: `call_${id ?? lines}`,
      tool: 'read',
      status: 'completed',
      input: { path: 'src/app.ts' },
      output: 'export const answer = 42;\n'.repeat(lines),
    },
  ],
  finish: 'stop',
});
/** Budgets small enough for a few lines of output to be worth pruning. */
const prunesEarly = { prune: true, pruning: { protectTokens: 0, minimumTokens: 0 } };

async function pruneJobsOf(session: SessionRow): Promise<Array<{ id: string; data: unknown }>> {
  const jobs = await t.queues.queue('prune').getJobs();
  return jobs
    .filter((job) => (job.data as { sessionPk: number }).sessionPk === session.pk)
    .map((job) => ({ id: job.id ?? '', data: job.data }));
}

describe('afterWrite: the auto trigger', () => {
  it('an append crossing the threshold requests one auto compaction, whose job is enqueued', async () => {
    const session = await newSession(t, 'tenant-a', 't-cross');
    // The history the report measures is stored: a report adds at most a quarter of the usable
    // 7,000 over the stored count.
    const crossing = await append('t-cross', [userText(6_000), question, finishedTurn(7_500)]);
    expect(crossing.compaction).toEqual({
      id: expect.stringMatching(/^cmp_/),
      status: 'pending',
      reason: 'auto',
    });
    expect(crossing.status.activeCompaction).toMatchObject({ id: crossing.compaction?.id, reason: 'auto' });
    expect(await t.jobIds('compact')).toContain(crossing.compaction?.id);
    // The compaction prunes too: no turn prune beside it.
    expect(crossing.prune).toBeNull();

    // While it is active, further appends start nothing and show it.
    const next = await append('t-cross', [question, finishedTurn(7_600)]);
    expect(next.compaction).toBeNull();
    expect(next.status.activeCompaction?.id).toBe(crossing.compaction?.id);
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(1);
  });

  it('an append below the threshold starts nothing and answers the stored count', async () => {
    const session = await newSession(t, 'tenant-a', 't-below');
    const answer = await append('t-below', [userText(100), finishedTurn(150)]);
    expect(answer).toMatchObject({ compaction: null, prune: null });
    expect(answer.status).toMatchObject({ overflow: false, activeCompaction: null, usable: 7_000 });
    expect(answer.status.tokens).toBeGreaterThanOrEqual(100);
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(0);
  });

  it('a reported prompt above the window starts an emergency (overflow) compaction', async () => {
    await newSession(t, 'tenant-a', 't-silent');
    const answer = await append('t-silent', [question, finishedTurn(9_000)]);
    expect(answer.compaction).toMatchObject({ reason: 'overflow', status: 'pending' });
  });

  it('starts nothing with auto compaction off, whatever the size', async () => {
    const session = await newSession(t, 'tenant-a', 't-off', { policy: { auto: false } });
    const answer = await append('t-off', [userText(6_500), question, finishedTurn(7_900)]);
    expect(answer).toMatchObject({ compaction: null, status: { overflow: true, activeCompaction: null } });
    expect(await countCompactionsOf(t.database.db, session.pk)).toBe(0);
  });

  it('at the tenant cap, the append succeeds and the compaction waits its turn in Postgres', async () => {
    const limits = new TenantLimits({ maxActiveCompactions: 1 });
    const writer = new SessionMessages(t.resources, limits);
    try {
      await newSession(t, 'tenant-a', 't-busy');
      await append('t-busy', [userText(6_000), question, finishedTurn(7_500)], writer);
      const held = await newSession(t, 'tenant-a', 't-held');
      const answer = await append('t-held', [userText(6_000), question, finishedTurn(7_500)], writer);
      expect(answer.compaction).toBeNull();
      expect(answer.status).toMatchObject({ overflow: true, activeCompaction: null });
      expect(await countCompactionsOf(t.database.db, held.pk)).toBe(0);
      expect(await findDeferredCompaction(t.database.db, held.pk)).toMatchObject({
        reason: 'auto',
        maxActive: 1,
      });
    } finally {
      await writer.close();
    }
  });
});

describe('afterWrite: the finished turn’s prune', () => {
  it('queues a prune when a finished turn leaves tool output worth pruning', async () => {
    const session = await newSession(t, 'tenant-a', 'p-turn', { policy: prunesEarly });
    const answer = await append('p-turn', [question, toolTurn(20)]);
    const jobs = await pruneJobsOf(session);
    expect(jobs.map((job) => job.data)).toEqual([{ sessionPk: session.pk, reason: 'turn' }]);
    expect(answer).toMatchObject({ compaction: null, prune: { jobId: jobs[0]?.id } });
  });

  it('queues none under the default budgets for a small context, nor for a re-posted turn', async () => {
    const small = await newSession(t, 'tenant-a', 'p-default');
    expect((await append('p-default', [question, toolTurn(200)])).prune).toBeNull();
    expect(await pruneJobsOf(small)).toEqual([]);

    const reposted = await newSession(t, 'tenant-a', 'p-repost', { policy: prunesEarly });
    await append('p-repost', [question, toolTurn(20, 'a1')]);
    // Take the first away, so that a second enqueue would show.
    await t.queues.queue('prune').drain();
    const again = await append('p-repost', [toolTurn(20, 'a1')]);
    expect(again.messages).toEqual([{ id: 'a1', seq: 2, created: false }]);
    expect(again.prune).toBeNull();
    expect(await pruneJobsOf(reposted)).toEqual([]);
  });
});
