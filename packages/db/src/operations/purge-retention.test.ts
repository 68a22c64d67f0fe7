import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { insertCompaction } from '../queries/compactions';
import { markPartsCompacted } from '../queries/parts';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import {
  OLD,
  RETENTION_NOW,
  SEEDED_SESSION_PURGE,
  seedCompactedSession,
} from '../test-support/retention-fixtures';
import { appendTestMessages } from '../test-support/append-test-messages';
import { completeCompaction } from './complete-compaction';
import { loadContextRows, loadHistoryPage } from './load-messages';
import { applyRetentionPurge, planRetentionPurge, type PurgeBatch } from './purge-retention';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

const CUTOFF = new Date(RETENTION_NOW.getTime() - 30 * 86_400_000);
const scope = (tenantId: string) => ({ tenantId, createdBefore: CUTOFF });
const tenant = () => `tenant_${randomUUID()}`;

/** Every stored row of a session that the purge may touch, as JSON (for "unchanged" checks). */
async function sessionRows(sessionPk: number): Promise<string> {
  const result = await t.db.execute(`
    select (select json_agg(m order by m.seq) from messages m where m.session_pk = ${sessionPk}) as messages,
           (select json_agg(p order by p.seq, p.idx) from parts p where p.session_pk = ${sessionPk}) as parts,
           (select json_agg(pp order by pp.seq, pp.idx) from part_prunes pp where pp.session_pk = ${sessionPk}) as prunes,
           (select json_agg(c order by c.id) from compactions c where c.session_pk = ${sessionPk}) as compactions`);
  return JSON.stringify(result.rows[0]);
}

/** The served context, as the API reads it, with and without pinned system messages. */
async function servedContext(sessionPk: number): Promise<string> {
  return JSON.stringify([
    await loadContextRows(t.db, sessionPk),
    await loadContextRows(t.db, sessionPk, { pinSystemMessages: false }),
  ]);
}

async function partsBySeq(sessionPk: number) {
  const result = await t.db.execute<{
    seq: number;
    call_id: string | null;
    text: string | null;
    tool_input: unknown;
    tool_output: string | null;
    purged: boolean;
  }>(`select seq, call_id, text, tool_input, tool_output, purged_at is not null as purged
      from parts where session_pk = ${sessionPk} order by seq, idx`);
  return result.rows;
}

describe('planRetentionPurge (dry run)', () => {
  it('counts what would go per session and writes nothing', async () => {
    const id = tenant();
    const session = await seedCompactedSession(t.db, id);
    const before = await sessionRows(session.pk);

    const plan = await planRetentionPurge(t.db, scope(id));

    expect(plan).toEqual([{ sessionId: session.id, ...SEEDED_SESSION_PURGE }]);
    expect(await sessionRows(session.pk)).toBe(before);
  });

  it('finds nothing superseded without a completed compaction (pending, running and failed ones change nothing)', async () => {
    const id = tenant();
    const session = await createTestSession(t.db, id);
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('hello')], { createdAt: OLD }),
      newMessage('assistant', [tool('call_1', 'o'.repeat(50))], { createdAt: OLD }),
      newMessage('user', [text('again')], { createdAt: OLD }),
    ]);
    await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
      status: 'failed',
      boundarySeq: 3,
    });
    expect(await planRetentionPurge(t.db, scope(id))).toEqual([]);
    // A pruned output is purgeable with or without a compaction: the view shows a placeholder.
    await markPartsCompacted(t.db, session.pk, [{ seq: 2, callId: 'call_1' }], { at: OLD, by: 'prune_x' });
    expect(await planRetentionPurge(t.db, scope(id))).toEqual([
      { sessionId: session.id, supersededMessages: 0, supersededParts: 0, prunedOutputs: 1, bytes: 50 },
    ]);
  });
});

describe('applyRetentionPurge', () => {
  it('purges exactly the eligible content, keeps every row, and leaves the served context byte-identical', async () => {
    const id = tenant();
    const session = await seedCompactedSession(t.db, id);
    const other = await seedCompactedSession(t.db, tenant());
    const otherBefore = await sessionRows(other.pk);
    const contextBefore = await servedContext(session.pk);
    const plan = await planRetentionPurge(t.db, scope(id));

    const report = await applyRetentionPurge(t.db, scope(id), { at: RETENTION_NOW });

    expect(report).toEqual(plan);
    expect(await servedContext(session.pk)).toBe(contextBefore);
    expect(await sessionRows(other.pk)).toBe(otherBefore);
    expect(await partsBySeq(session.pk)).toEqual([
      {
        seq: 1,
        call_id: null,
        text: 'You are a careful coding agent.',
        tool_input: null,
        tool_output: null,
        purged: false,
      },
      { seq: 2, call_id: null, text: null, tool_input: null, tool_output: null, purged: true },
      { seq: 3, call_id: null, text: null, tool_input: null, tool_output: null, purged: true },
      { seq: 3, call_id: 'call_1', text: null, tool_input: null, tool_output: null, purged: true },
      {
        seq: 4,
        call_id: null,
        text: 'Also check the lexer.',
        tool_input: null,
        tool_output: null,
        purged: false,
      },
      {
        seq: 5,
        call_id: 'call_2',
        text: null,
        tool_input: { path: 'call_2.ts' },
        tool_output: null,
        purged: true,
      },
      {
        seq: 6,
        call_id: null,
        text: 'Now run the tests.',
        tool_input: null,
        tool_output: null,
        purged: false,
      },
      {
        seq: 7,
        call_id: 'call_3',
        text: null,
        tool_input: { path: 'call_3.ts' },
        tool_output: 'z'.repeat(200),
        purged: false,
      },
      {
        seq: 8,
        call_id: null,
        text: 'Summary: parser test failing.',
        tool_input: null,
        tool_output: null,
        purged: false,
      },
    ]);
    const marked = await t.db.execute<{ seq: number }>(
      `select seq from messages where session_pk = ${session.pk} and purged_at = '${RETENTION_NOW.toISOString()}' order by seq`,
    );
    expect(marked.rows.map((r) => r.seq)).toEqual([2, 3]);
    // The raw history still reads: purged content comes back empty, metadata intact.
    const history = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 100 });
    expect(history.messages.map((m) => m.id)).toEqual([
      'sys',
      'u1',
      'a1',
      'u2',
      'a2',
      'u3',
      'a3',
      `sum_${session.pk}`,
    ]);
    expect(history.messages[1]!.parts).toEqual([{ type: 'text', text: '', tokens: expect.any(Number) }]);
    // Nothing is left, and a second run changes nothing.
    expect(await planRetentionPurge(t.db, scope(id))).toEqual([]);
    const after = await sessionRows(session.pk);
    expect(await applyRetentionPurge(t.db, scope(id))).toEqual([]);
    expect(await sessionRows(session.pk)).toBe(after);
  });

  it('purges the excerpts a clamp showed of purged content too', async () => {
    const id = tenant();
    const session = await seedCompactedSession(t.db, id);
    // An excerpt of a message now behind the boundary (seq 2), and of a pruned output (seq 5).
    await t.db.execute(`
      insert into part_clamps (part_pk, session_pk, clamped_by, clamped_at, field, tokens, output_tokens, text, tool_output)
      select p.pk, p.session_pk, 'cmp_test', now(), case when p.seq = 2 then 'text' else 'output' end, 5, 0,
             case when p.seq = 2 then 'Fix the failing [...]' end, case when p.seq = 5 then 'yyy[...]' end
      from parts p where p.session_pk = ${session.pk} and (p.seq = 2 or p.call_id = 'call_2')`);
    await t.db.execute(
      `update parts set clamped = true where session_pk = ${session.pk} and (seq = 2 or call_id = 'call_2')`,
    );

    await applyRetentionPurge(t.db, scope(id), { at: RETENTION_NOW });

    const { rows } = await t.db.execute<{ seq: number; text: string | null; tool_output: string | null }>(
      `select p.seq, c.text, c.tool_output from part_clamps c join parts p on p.pk = c.part_pk
       where c.session_pk = ${session.pk} order by p.seq`,
    );
    expect(rows).toEqual([{ seq: 5, text: null, tool_output: null }]);
  });

  it('works in batches that together cover more rows than one batch', async () => {
    const id = tenant();
    const session = await createTestSession(t.db, id);
    // 25 superseded user messages, then 12 assistant turns whose pruned outputs stay in the view.
    await appendTestMessages(
      t.db,
      session.pk,
      Array.from({ length: 25 }, (_, i) => newMessage('user', [text(`old ${i}`)], { createdAt: OLD })),
    );
    await appendTestMessages(
      t.db,
      session.pk,
      Array.from({ length: 12 }, (_, i) =>
        newMessage('assistant', [tool(`c${i}`, 'o'.repeat(10))], { createdAt: OLD }),
      ),
    );
    await markPartsCompacted(
      t.db,
      session.pk,
      Array.from({ length: 12 }, (_, i) => ({ seq: 26 + i, callId: `c${i}` })),
      { at: OLD, by: 'prune_x' },
    );
    const compaction = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    await completeCompaction(t.db, {
      compactionId: compaction!.id,
      sessionPk: session.pk,
      summaryMessages: [newMessage('assistant', [text('summary')], { createdAt: OLD })],
      boundarySeq: 26,
      tokensBefore: 0,
      messagesBefore: 0,
      finishedAt: OLD,
    });
    const contextBefore = await servedContext(session.pk);

    const batches: PurgeBatch[] = [];
    const report = await applyRetentionPurge(t.db, scope(id), {
      batchSize: 10,
      onBatch: (b) => batches.push(b),
    });

    expect(batches.map((b) => [b.kind, b.rows])).toEqual([
      ['superseded', 10],
      ['superseded', 10],
      ['superseded', 5],
      ['pruned', 10],
      ['pruned', 2],
    ]);
    expect(report).toEqual([
      {
        sessionId: session.id,
        supersededMessages: 25,
        supersededParts: 25,
        prunedOutputs: 12,
        bytes: batches.reduce((n, b) => n + b.bytes, 0),
      },
    ]);
    expect(await servedContext(session.pk)).toBe(contextBefore);
    expect(await planRetentionPurge(t.db, scope(id))).toEqual([]);
  });

  it('uses batches of 1,000 by default', async () => {
    const id = tenant();
    const session = await createTestSession(t.db, id);
    for (let i = 0; i < 2; i++) {
      await appendTestMessages(
        t.db,
        session.pk,
        Array.from({ length: 600 }, (_, j) => newMessage('user', [text(`m ${i}.${j}`)], { createdAt: OLD })),
      );
    }
    const compaction = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'auto',
      strategy: 'truncate',
    });
    await completeCompaction(t.db, {
      compactionId: compaction!.id,
      sessionPk: session.pk,
      summaryMessages: [],
      boundarySeq: 1_101,
      tokensBefore: 0,
      messagesBefore: 0,
      finishedAt: OLD,
    });
    const batches: number[] = [];
    await applyRetentionPurge(t.db, scope(id), { onBatch: (b) => batches.push(b.rows) });
    expect(batches).toEqual([1_000, 100]);
  });

  it('rejects a batch size below 1', async () => {
    await expect(applyRetentionPurge(t.db, scope(tenant()), { batchSize: 0 })).rejects.toThrow(RangeError);
  });
});
