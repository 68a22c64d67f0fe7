import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PruningPolicy } from '@compactor/core';
import { MIGRATIONS_FOLDER } from '../migrate';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { pruneSelectionFixtures } from '../test-support/prune-selection';
import { useTestDatabase } from '../test-support/test-database';
import { markPartsCompacted } from './parts';
import { pruneToolOutputs } from './prune-selection';
import { firstKeptOf, markPrunedRecallable, markRecallableBehind, RECALLABLE_WINDOW } from './recallable';
import { findLatestCompletedCompaction } from './compactions';

const t = useTestDatabase();
const { compact } = pruneSelectionFixtures(t);

/** The session's flagged parts, as `seq.idx`, in order. */
async function flagged(sessionPk: number): Promise<string[]> {
  const { rows } = await t.db.execute<{ at: string }>(sql`
    select seq || '.' || idx as at from parts
    where session_pk = ${sessionPk} and recallable order by seq, idx`);
  return rows.map((r) => r.at);
}

/** `count` messages, each a text part then a finished tool output (`call<seq>`). */
async function appendTurns(sessionPk: number, count: number, firstSeq = 1): Promise<void> {
  const batch = Array.from({ length: count }, (_, i) =>
    newMessage(i % 2 === 0 ? 'user' : 'assistant', [
      text(`turn ${firstSeq + i} about module${firstSeq + i}`),
      tool(`call${firstSeq + i}`, `output of src/module${firstSeq + i}.ts `.repeat(20)),
    ]),
  );
  await appendTestMessages(t.db, sessionPk, batch);
}

describe('parts.recallable', () => {
  it('is false on append, and the search index holds only flagged parts', async () => {
    const session = await createTestSession(t.db);
    await appendTurns(session.pk, 3);
    const { rows } = await t.db.execute<{ parts: number; recallable: number }>(sql`
      select count(*)::int as parts, count(*) filter (where recallable)::int as recallable
      from parts where session_pk = ${session.pk}`);
    expect(rows[0]).toEqual({ parts: 6, recallable: 0 });
    // The index's predicate leaves unflagged parts out: an append computes no words.
    const index = await t.db.execute<{ predicate: string }>(sql`
      select pg_get_expr(i.indpred, i.indrelid) as predicate from pg_index i
      where i.indexrelid = 'parts_recall_search_idx'::regclass`);
    expect(index.rows[0]!.predicate).toMatch(/^\(recallable AND /);
  });

  it('flags the range a compaction puts behind its boundary, window by window, from the current boundary', async () => {
    const session = await createTestSession(t.db);
    await appendTurns(session.pk, 8);
    // Seqs 1..5 in windows of 2: [0, 2), [2, 4), [4, 6); two parts a message.
    expect(await markRecallableBehind(t.db, session.pk, 6, 2)).toBe(10);
    expect(await flagged(session.pk)).toEqual([
      '1.0',
      '1.1',
      '2.0',
      '2.1',
      '3.0',
      '3.1',
      '4.0',
      '4.1',
      '5.0',
      '5.1',
    ]);
    // A retry finds them flagged.
    expect(await markRecallableBehind(t.db, session.pk, 6, 2)).toBe(0);

    await compact(session.pk, 6, []);
    // The next compaction starts at the current boundary: what lies behind it is not read again.
    await t.db.execute(sql`update parts set recallable = false where session_pk = ${session.pk} and seq = 1`);
    expect(await markRecallableBehind(t.db, session.pk, 8, 2)).toBe(4);
    expect(await flagged(session.pk)).toEqual([
      ...['2.0', '2.1', '3.0', '3.1', '4.0', '4.1', '5.0', '5.1'],
      ...['6.0', '6.1', '7.0', '7.1'],
    ]);
  });

  it("writes the calls' arguments with their flags, from the first kept seq the caller gives", async () => {
    const session = await createTestSession(t.db);
    await appendTurns(session.pk, 6);
    // An output flagged before arguments were written (an older prune) still gets them, uncounted.
    await t.db.execute(
      sql`update parts set recallable = true where session_pk = ${session.pk} and seq = 2 and idx = 1`,
    );
    expect(await markRecallableBehind(t.db, session.pk, 4, 2, firstKeptOf(null))).toBe(5);
    const { rows } = await t.db.execute<{ at: string; recall_arguments: string | null }>(sql`
      select seq || '.' || idx as at, recall_arguments from parts
      where session_pk = ${session.pk} and type = 'tool' order by seq`);
    expect(rows).toEqual([
      { at: '1.1', recall_arguments: 'call1.ts' },
      { at: '2.1', recall_arguments: 'call2.ts' },
      { at: '3.1', recall_arguments: 'call3.ts' },
      { at: '4.1', recall_arguments: null },
      { at: '5.1', recall_arguments: null },
      { at: '6.1', recall_arguments: null },
    ]);
    // Found by its arguments through their own index.
    const found = await t.db.execute<{ n: number }>(sql`
      select count(*)::int as n from parts
      where session_pk = ${session.pk} and recall_arguments is not null
        and to_tsvector('simple'::regconfig, translate(recall_arguments, '/.@:\\', '     ')) @@ 'call3'::tsquery`);
    expect(found.rows[0]!.n).toBe(1);

    // After a compaction, its row alone gives the first kept seq the view bounds compute.
    await compact(session.pk, 4, []);
    const latest = await findLatestCompletedCompaction(t.db, session.pk);
    expect(firstKeptOf(latest)).toBe(4);
    expect(await markRecallableBehind(t.db, session.pk, 6, 2, firstKeptOf(latest))).toBe(4);
    expect(await flagged(session.pk)).toEqual([
      '1.0',
      '1.1',
      '2.0',
      '2.1',
      '3.0',
      '3.1',
      '4.0',
      '4.1',
      '5.0',
      '5.1',
    ]);
  });

  it("firstKeptOf: the view bounds' first kept seq from a compaction row, or null when only a read can say", () => {
    expect(firstKeptOf(null)).toBe(0);
    expect(firstKeptOf({ boundarySeq: 12, summaryMessageIds: ['s1'] })).toBe(12);
    expect(firstKeptOf({ boundarySeq: null, summaryMessageIds: null })).toBe(0);
    expect(firstKeptOf({ boundarySeq: null, summaryMessageIds: [] })).toBe(2_147_483_647);
    expect(firstKeptOf({ boundarySeq: null, summaryMessageIds: ['s1'] })).toBeNull();
  });

  it(`flags a first compaction's history longer than one window (${RECALLABLE_WINDOW} seqs)`, async () => {
    const session = await createTestSession(t.db);
    await appendTurns(session.pk, 1_100);
    // Boundary 1,051: seqs 1..1,050 in three windows.
    expect(await markRecallableBehind(t.db, session.pk, 1_051)).toBe(2_100);
    const { rows } = await t.db.execute<{ first: number; last: number; count: number }>(sql`
      select min(seq)::int as first, max(seq)::int as last, count(*)::int as count
      from parts where session_pk = ${session.pk} and recallable`);
    expect(rows[0]).toEqual({ first: 1, last: 1_050, count: 2_100 });
  });

  it('flags the outputs a prune marked, after its statement, chunk by chunk within the seqs it returned', async () => {
    const session = await createTestSession(t.db);
    const big = (id: string) => tool(id, 'x'.repeat(400), { outputTokens: 100, tokens: 105 });
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('go')]),
      newMessage('assistant', [text('reading'), big('a'), big('b')]),
      newMessage('user', [text('more')]),
      newMessage('assistant', [big('tail')]),
      newMessage('user', [text('last')]),
    ]);
    const pruning: PruningPolicy = {
      protectTokens: 100,
      minimumTokens: 50,
      protectedTools: [],
      protectUserTurns: 1,
      cacheAware: null,
      cacheHorizonTurns: 10,
    };
    const at = new Date('2026-11-02T00:00:00Z');
    // Newest first: tail (100, protected), b (200 > 100: candidate), a.
    const pruned = await pruneToolOutputs(t.db, session.pk, {
      coversThroughSeq: 5,
      pinSystemMessages: true,
      pruning,
      at,
      by: 'prune_job',
    });
    expect(pruned.parts).toBe(2);
    expect(pruned.markedSeqs).toEqual({ first: 2, last: 2 });
    // The marks compute no words: the prune's statement costs what it did before recall.
    expect(await flagged(session.pk)).toEqual([]);
    // Chunks of one mark: (2, 1), then after it (2, 2), then nothing after that.
    expect(await markPrunedRecallable(t.db, session.pk, 'prune_job', pruned.markedSeqs!, 1)).toBe(2);
    expect(await flagged(session.pk)).toEqual(['2.1', '2.2']);
    // The calls' arguments are written with the flags (once: a later compaction finds them).
    const args = await t.db.execute<{ recall_arguments: string | null }>(sql`
      select recall_arguments from parts where session_pk = ${session.pk} and recallable order by seq, idx`);
    expect(args.rows.map((r) => r.recall_arguments)).toEqual(['a.ts', 'b.ts']);
    expect(await markPrunedRecallable(t.db, session.pk, 'another_job', { first: 0, last: 5 })).toBe(0);

    // The char-estimate path marks by call id, and says where too; flagged the same way.
    const marked = await markPartsCompacted(t.db, session.pk, [{ seq: 4, callId: 'tail' }], {
      at,
      by: 'prune_job',
    });
    expect(marked).toEqual({ parts: 1, tokens: 100, markedSeqs: { first: 4, last: 4 } });
    expect(await flagged(session.pk)).toEqual(['2.1', '2.2']);
    // A range that leaves the mark out flags nothing; a repeat over all flags only what is left.
    expect(await markPrunedRecallable(t.db, session.pk, 'prune_job', { first: 0, last: 3 }, 1)).toBe(0);
    expect(await markPrunedRecallable(t.db, session.pk, 'prune_job', { first: 0, last: 5 }, 1)).toBe(1);
    expect(await flagged(session.pk)).toEqual(['2.1', '2.2', '4.0']);
    // Nothing marked, nothing to read.
    expect(await markPartsCompacted(t.db, session.pk, [], { at, by: 'prune_job' })).toEqual({
      parts: 0,
      tokens: 0,
      markedSeqs: null,
    });
  });

  it("flags exactly the parts its job marked, across chunks, and no other job's, session's or tenant's", async () => {
    // Three outputs a message over 30 messages, in two sessions of one tenant and one of another,
    // every part unflagged; the same seqs marked in all three, by two jobs.
    const mine = await createTestSession(t.db, 'tenant-a');
    const sibling = await createTestSession(t.db, 'tenant-a');
    const otherTenant = await createTestSession(t.db, 'tenant-b');
    for (const session of [mine, sibling, otherTenant]) {
      await appendTestMessages(
        t.db,
        session.pk,
        Array.from({ length: 30 }, (_, i) =>
          newMessage('assistant', [
            text(`turn ${i + 1}`),
            ...[0, 1, 2].map((k) => tool(`call${i + 1}_${k}`, `output ${i + 1}.${k}`)),
          ]),
        ),
      );
      // Job one marks parts 1 and 3 of seqs 5..24, job two part 2 of the same seqs and part 1 of
      // seqs 1..4 and 25..30, so job one's range holds job two's marks between its own.
      await t.db.execute(sql`
        insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
        select session_pk, seq, idx, now(),
               case when seq between 5 and 24 and idx in (1, 3) then 'job_one' else 'job_two' end
        from parts
        where session_pk = ${session.pk} and type = 'tool'
          and ((seq between 5 and 24) or idx = 1)`);
    }
    const expected = Array.from({ length: 20 }, (_, i) => [`${i + 5}.1`, `${i + 5}.3`]).flat();

    // The range holds 60 marks, 40 of them its own: nine chunks of 7, the last one short.
    expect(await markPrunedRecallable(t.db, mine.pk, 'job_one', { first: 5, last: 24 }, 7)).toBe(40);
    expect(await flagged(mine.pk)).toEqual(expected);
    // The flags are the marks of job one, no more, no less.
    const { rows } = await t.db.execute<{ unflagged_marks: number; flagged_unmarked: number }>(sql`
      select count(*) filter (where pp.compacted_by = 'job_one' and not p.recallable)::int as unflagged_marks,
             count(*) filter (where p.recallable and pp.compacted_by is distinct from 'job_one')::int as flagged_unmarked
      from parts p
      left join part_prunes pp on pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx
      where p.session_pk = ${mine.pk}`);
    expect(rows[0]).toEqual({ unflagged_marks: 0, flagged_unmarked: 0 });
    expect(await flagged(sibling.pk)).toEqual([]);
    expect(await flagged(otherTenant.pk)).toEqual([]);
    // Done: a repeat finds nothing left to flag.
    expect(await markPrunedRecallable(t.db, mine.pk, 'job_one', { first: 5, last: 24 }, 7)).toBe(0);
  });

  it("backfills (migration 0016) parts behind each session's latest boundary and pruned outputs", async () => {
    const session = await createTestSession(t.db);
    await appendTurns(session.pk, 6);
    await compact(session.pk, 3, []);
    await compact(session.pk, 4, []);
    await t.db.execute(sql`
      insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
      values (${session.pk}, 5, 1, now(), 'prune_job')`);
    const other = await createTestSession(t.db);
    await appendTurns(other.pk, 2);
    await t.db.execute(
      sql`update parts set recallable = false where session_pk in (${session.pk}, ${other.pk})`,
    );

    await t.db.execute(sql.raw(backfillStatement()));
    expect(await flagged(session.pk)).toEqual(['1.0', '1.1', '2.0', '2.1', '3.0', '3.1', '5.1']);
    expect(await flagged(other.pk)).toEqual([]);
  });
});

/** The migration's backfill statement, as the migration runs it. */
function backfillStatement(): string {
  const migration = readFileSync(join(MIGRATIONS_FOLDER, '0016_recall_index.sql'), 'utf8');
  const statement = migration
    .split('--> statement-breakpoint')
    .map((s) => s.trim())
    .find((s) => s.startsWith('UPDATE "parts"'));
  if (!statement) throw new Error('migration 0016 has no backfill');
  return statement;
}
