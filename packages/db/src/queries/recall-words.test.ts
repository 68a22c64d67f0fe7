import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { completeCompaction } from '../operations/complete-compaction';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { insertCompaction } from './compactions';
import { searchRecall, searchRecallSql } from './recall';
import { RECALL_WORDS_BATCH_BYTES } from './recall-flag';
import { markPrunedRecallable, markRecallableBehind } from './recallable';
import { recallVectorOf } from '@compactor/core';

const t = useTestDatabase();

/** A completed compaction with boundary `boundarySeq` and one summary saying `summary`, flagged first as finalize does. */
async function compact(sessionPk: number, boundarySeq: number, summary: string): Promise<void> {
  await markRecallableBehind(t.db, sessionPk, boundarySeq);
  const row = await insertCompaction(t.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk,
    reason: 'manual',
    strategy: 'summarize',
    status: 'running',
  });
  const now = new Date();
  await completeCompaction(t.db, {
    compactionId: row!.id,
    sessionPk,
    boundarySeq,
    summaryMessages: [
      {
        id: `sum_${row!.id}`,
        role: 'assistant',
        parts: [{ type: 'text', text: summary, tokens: 20 }],
        finish: 'stop',
        error: null,
        usage: null,
        createdAt: now,
        metadata: {},
        contentHash: 'x',
      },
    ],
    tokensBefore: 0,
    messagesBefore: 0,
    finishedAt: now,
  });
}

const search = (sessionPk: number, query: string) =>
  searchRecall(t.db, sessionPk, { query, limit: 10, excerptChars: 200, pinSystemMessages: true });

describe('recall words', () => {
  it("leaves a summary's parts unflagged when a later compaction puts it behind the boundary", async () => {
    const session = await createTestSession(t.db);
    const turns = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) =>
        newMessage(i % 2 === 0 ? 'user' : 'assistant', [text(`turn ${from + i} about wombat${from + i}`)]),
      );
    await appendTestMessages(t.db, session.pk, turns(1, 4));
    await compact(session.pk, 3, 'Summary: the numbat plan');
    await appendTestMessages(t.db, session.pk, turns(6, 4));
    // The second compaction's window runs from the first boundary past the first summary (seq 5).
    await compact(session.pk, 8, 'Summary: the bilby plan');

    const { rows } = await t.db.execute<{ seq: number; summary: boolean; recallable: boolean }>(sql`
      select p.seq, m.summary, p.recallable from parts p join messages m on m.pk = p.message_pk
      where p.session_pk = ${session.pk} order by p.seq, p.idx`);
    expect(rows.filter((r) => r.summary).map((r) => [r.seq, r.recallable])).toEqual([
      [5, false],
      [10, false],
    ]);
    expect(rows.filter((r) => !r.summary && r.seq < 8).every((r) => r.recallable)).toBe(true);
    // What recall returns is unchanged: the summarized turns, never a summary.
    expect((await search(session.pk, 'wombat7')).map((h) => h.seq)).toEqual([7]);
    expect(await search(session.pk, 'numbat')).toEqual([]);
  });

  it('splits paths, addresses and backslashes into words as before, multibyte text included', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('read src/parser.ts and mail ana@exämple.org')]),
      newMessage('assistant', [tool('c1', 'C:\\Users\\zoë\\notes.txt at host:8080 — ünïcode/päth')]),
      newMessage('user', [text('kept in view')]),
    ]);
    await compact(session.pk, 3, 'Summary');
    for (const [query, seq] of [
      ['parser', 1],
      ['exämple', 1],
      ['ana', 1],
      ['zoë', 2],
      ['notes', 2],
      ['8080', 2],
      ['päth', 2],
      ['src/parser.ts', 1],
    ] as const) {
      expect(
        (await search(session.pk, query)).map((h) => h.seq),
        query,
      ).toEqual([seq]);
    }
    // The stored words are the worker's (core recallVectorOf), as Postgres reads its literal.
    const { rows } = await t.db.execute<{ doc: string; stored: string; worker: string }>(sql`
      select coalesce(text, tool_output) as doc, recall_words::text as stored from parts
      where session_pk = ${session.pk} and recallable order by seq, idx`);
    for (const row of rows) {
      const { rows: cast } = await t.db.execute<{ worker: string }>(
        sql`select ${recallVectorOf(row.doc)}::tsvector::text as worker`,
      );
      expect(row.stored).toBe(cast[0]!.worker);
    }
  });

  it('finds by the same words on both sides: phrases, hyphens, underscores, non-ASCII, NUL, lone surrogates, long texts', async () => {
    const session = await createTestSession(t.db);
    const long = `${'filler '.repeat(14_000)}needle_at_98k ${'x'.repeat(3_000)} beyond_the_cut`;
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('the exit code was 137 after the OOM killer ran')]),
      newMessage('assistant', [tool('c1', 'npm ERR! peer-deps conflict in my_module_name; see Ärger.log')]),
      newMessage('assistant', [tool('c2', 'bytes\u0001between and a lone \ud800surrogate here')]),
      newMessage('assistant', [tool('c3', long)]),
      newMessage('user', [text('kept in view')]),
    ]);
    await compact(session.pk, 5, 'Summary');
    const seqs = async (query: string) => (await search(session.pk, query)).map((h) => h.seq);
    expect(await seqs('"exit code" 137')).toEqual([1]);
    expect(await seqs('"code exit"')).toEqual([]);
    expect(await seqs('peer-deps')).toEqual([2]);
    expect(await seqs('PEER deps')).toEqual([2]);
    expect(await seqs('my_module_name')).toEqual([2]);
    expect(await seqs('module')).toEqual([2]);
    expect(await seqs('ärger')).toEqual([2]);
    expect(await seqs('between')).toEqual([3]);
    // NUL cannot be stored; in a query it separates words, as it did not before (an error).
    expect(await seqs('\u0000between\u0000')).toEqual([3]);
    expect(await seqs('surrogate')).toEqual([3]);
    expect(await seqs('needle_at_98k')).toEqual([4]);
    // Past the first 100,000 characters nothing is indexed, as before.
    expect(await seqs('beyond_the_cut')).toEqual([]);
    expect(await seqs('oom or nothing')).toEqual([1]);
    expect(await seqs('exit -killer')).toEqual([]);
    expect(await seqs('-exit')).toEqual([]);
    expect(await seqs('--- ...')).toEqual([]);
  });

  it("gives a flagged part Postgres's words when flagged without words or when its text changes", async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('late', null, { status: 'running' })]),
      newMessage('user', [text('raw flagged quokka')]),
      newMessage('user', [text('kept in view')]),
    ]);
    await compact(session.pk, 2, 'Summary');
    expect(await search(session.pk, 'platypus')).toEqual([]);
    // A compacted call's result arriving later (db finishCompactedTasks) changes a flagged part.
    await t.db.execute(sql`update parts set tool_status = 'completed', tool_output = 'the platypus result'
      where session_pk = ${session.pk} and call_id = 'late'`);
    expect((await search(session.pk, 'platypus')).map((h) => h.seq)).toEqual([1]);
    // A writer that flags without words (a hand-run statement) leaves nothing unindexed.
    await t.db.execute(sql`update parts set recallable = true where session_pk = ${session.pk} and seq = 2`);
    const { rows } = await t.db.execute<{ words: string | null }>(
      sql`select recall_words::text as words from parts where session_pk = ${session.pk} and seq = 2`,
    );
    expect(rows[0]!.words).toBe("'flagged':2 'quokka':3 'raw':1");
    // The retention purge clears the text, and the words with it.
    await t.db.execute(sql`update parts set tool_output = null, purged_at = now()
      where session_pk = ${session.pk} and call_id = 'late'`);
    const { rows: purged } = await t.db.execute<{ words: string | null }>(
      sql`select recall_words::text as words from parts where session_pk = ${session.pk} and call_id = 'late'`,
    );
    expect(purged[0]!.words).toBe('');
  });

  it("reads a window's texts in batches of bounded size, each part's words the worker's", async () => {
    const session = await createTestSession(t.db);
    // Four 450 KB outputs count 400 KB each against a 1 MB batch: the first statement brings the
    // request's and the first two outputs' texts, a second read the last two.
    const big = (i: number) => `marker${i} <tag>${i}</tag> ${'lorem ipsum '.repeat(37_500)}`;
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('a small request first')]),
      ...[1, 2, 3, 4].map((i) => newMessage('assistant', [tool(`big${i}`, big(i))])),
      newMessage('user', [text('kept in view')]),
    ]);
    expect(RECALL_WORDS_BATCH_BYTES).toBe(1 << 20);
    expect(await markRecallableBehind(t.db, session.pk, 6)).toBe(5);
    const { rows } = await t.db.execute<{ seq: number; stored: string }>(sql`
      select p.seq, p.recall_words::text as stored from parts p
      where p.session_pk = ${session.pk} and p.recallable order by p.seq`);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    for (const [i, row] of rows.slice(1).entries()) {
      const { rows: cast } = await t.db.execute<{ worker: string }>(
        sql`select ${recallVectorOf(big(i + 1).slice(0, 100_000))}::tsvector::text as worker`,
      );
      expect(row.stored).toBe(cast[0]!.worker);
    }
    // Markup is words here (Postgres's parser drops a tag): each output found by it.
    await compact(session.pk, 6, 'Summary');
    expect((await search(session.pk, 'tag marker3')).map((h) => h.seq)).toEqual([4]);
  });

  it("gives a pruned output Postgres's words when its prune flags it (a prune's texts are not read into the worker)", async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('old', 'wallaby and co: src/parser.ts')]),
      newMessage('user', [text('next')]),
    ]);
    await t.db.execute(sql`insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
      select session_pk, seq, idx, now(), 'prn_words' from parts where session_pk = ${session.pk} and seq = 1`);
    expect(
      await markPrunedRecallable(t.db, session.pk, 'prn_words', { first: 1, last: 1 }, 500, {
        yieldRatio: 0,
      }),
    ).toBe(1);
    const { rows } = await t.db.execute<{ stored: string; parsed: string }>(
      sql`select recall_words::text as stored, parts_recall_words_of(tool_output)::text as parsed
          from parts where session_pk = ${session.pk} and seq = 1`,
    );
    expect(rows[0]!.stored).toBe(rows[0]!.parsed);
    expect(rows[0]!.stored).toContain("'wallaby'");
    expect((await search(session.pk, 'wallaby parser')).map((h) => [h.seq, h.source])).toEqual([
      [1, 'cleared'],
    ]);
  });

  it("is looked up in the search index, the query's words spelled as the index's", async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [newMessage('user', [text('anything')])]);
    // On a handful of rows the session's range of `parts_session_seq_idx` is the cheapest plan
    // whatever the words; without it (dropped in a transaction rolled back, this file's own
    // database) and without sequential scans, the session's parts are reached through the search
    // index, and its words looked up in it only if the query spells its expression exactly.
    let plan = '';
    await t.db
      .transaction(async (tx) => {
        await tx.execute(sql`drop index parts_session_seq_idx`);
        await tx.execute(sql`set local enable_seqscan = off`);
        const { rows } = await tx.execute<{ 'QUERY PLAN': string }>(
          sql`explain ${searchRecallSql(session.pk, {
            query: 'parser',
            limit: 5,
            excerptChars: 100,
            pinSystemMessages: true,
          })}`,
        );
        plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        throw new Error('rolled back');
      })
      .catch((error: unknown) => {
        if (!(error instanceof Error && error.message === 'rolled back')) throw error;
      });
    // Both keys in the index condition: the session alone (btree_gin's key) would read every
    // flagged part of the session and compute its words to filter them.
    expect(plan).toMatch(
      /Bitmap Index Scan on parts_recall_search_idx .*\n\s*Index Cond: \(\(session_pk = \S+\) AND \(recall_words @@ /,
    );
  });
});
