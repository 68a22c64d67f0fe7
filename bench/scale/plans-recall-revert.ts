/**
 * The plans in docs/plans/recall-flags-revert-cache-100k.txt: on the database the scale bench
 * keeps (`BENCH_OTHER_GROWTH=0 BENCH_KEEP_DATABASE=1 npm run bench -- scale`), records each
 * path's statements (run in a transaction that is rolled back), then replays them in order under
 * EXPLAIN (ANALYZE, BUFFERS) in one transaction, rolled back; setup statements run first.
 *
 *   npx tsx bench/scale/plans-recall-revert.ts [flag] [behind] [cache] [head] [revert] [prepared]
 *
 * BENCH_SCALE_DATABASE_URL names the database (default: the local server's compactor_bench_scale),
 * PLANS_OUT the output file (default: the docs file above).
 */
import { writeFileSync } from 'node:fs';
import { sql as dsql } from 'drizzle-orm';
import { DEFAULT_POLICY } from '@compactor/core';
import {
  beginPreparedSummary,
  createDatabase,
  endPreparedSummary,
  findPreparedSummary,
  markPrunedRecallable,
  markRecallableBehind,
  pruneToolOutputs,
  requestPreparedSummary,
  revertCompaction,
  savePreparedSummary,
  selectCacheBaseline,
  selectCacheHead,
  type Db,
} from '@compactor/db';
import { QueryRecorder, type RecordedQuery } from './plans';

const URL =
  process.env.BENCH_SCALE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_scale';
const { db, pool } = createDatabase(URL, { statementTimeoutMs: 0 });
const recorder = new QueryRecorder(pool);
class Rollback extends Error {}

interface Path {
  name: string;
  setup: string[];
  queries: RecordedQuery[];
  explain: (q: RecordedQuery, i: number, all: RecordedQuery[]) => boolean;
}
const paths: Path[] = [];

async function record(
  name: string,
  work: (tx: Db) => Promise<unknown>,
  setup: string[] = [],
  explain: Path['explain'] = () => true,
) {
  const { queries, error } = await recorder.record(() =>
    db.transaction(async (tx) => {
      for (const s of setup) await tx.execute(dsql.raw(s));
      const result = await work(tx as unknown as Db);
      console.log(`${name}: ${JSON.stringify(result)?.slice(0, 160)}`);
      throw new Rollback();
    }),
  );
  if (error && !(error instanceof Rollback)) throw error;
  paths.push({
    name,
    setup,
    queries: queries.filter(
      (q) => !setup.includes(q.text) && !/^\s*savepoint|^\s*release|^\s*rollback/i.test(q.text),
    ),
    explain,
  });
}

const out: string[] = [];
async function replay(path: Path) {
  const client = await pool.connect();
  try {
    await client.query('begin');
    for (const s of path.setup) await client.query(s);
    for (const [i, q] of path.queries.entries()) {
      if (!path.explain(q, i, path.queries)) {
        await client.query(q.text, q.values);
        continue;
      }
      const res = await client.query(`explain (analyze, buffers) ${q.text}`, q.values);
      const lines = res.rows.map((r: Record<string, string>) => r['QUERY PLAN'] ?? '');
      const exec = lines.find((l: string) => l.startsWith('Execution Time'));
      const top = lines.find((l: string) => /^\s*Buffers:/.test(l));
      console.log(
        `  ${path.name} #${i + 1}/${path.queries.length}: ${exec} | ${top?.trim()} | ${q.text.replace(/\s+/g, ' ').slice(0, 100)}`,
      );
      out.push(
        `== ${path.name} (statement ${i + 1} of ${path.queries.length})`,
        ...(path.setup.length ? [`-- setup, in the same transaction: ${path.setup.join('; ')}`] : []),
        q.text.trim(),
        `-- params: ${JSON.stringify(q.values).slice(0, 400)}`,
        ...lines,
        '',
      );
    }
  } finally {
    await client.query('rollback');
    client.release();
  }
}

const args = process.argv.slice(2);
const only = (key: string) => args.length === 0 || args.includes(key);
const firstTwoAndLast = (q: RecordedQuery, i: number, all: RecordedQuery[]) =>
  !/with chunk as materialized|set recallable = true/.test(q.text) ||
  all.filter((x) => x.text === q.text).indexOf(q) < 2 ||
  i === all.length - 1;

const prune = (tx: Db, by: string) =>
  pruneToolOutputs(tx, 4, {
    coversThroughSeq: 100_000,
    pinSystemMessages: DEFAULT_POLICY.pinSystemMessages,
    pruning: DEFAULT_POLICY.pruning,
    at: new Date(),
    by,
  });

if (only('flag')) {
  await record(
    'prune + markPrunedRecallable, never-compacted 100k session (pk 4): outputs flagged already',
    async (tx) => {
      const marked = await prune(tx, 'prn_plan');
      return { marked, flagged: await markPrunedRecallable(tx, 4, 'prn_plan', marked.markedSeqs!) };
    },
    [],
    firstTwoAndLast,
  );
  await record(
    'prune + markPrunedRecallable, never-compacted 100k session (pk 4): the first 1,000 seqs unflagged',
    async (tx) => {
      const marked = await prune(tx, 'prn_plan');
      return { marked, flagged: await markPrunedRecallable(tx, 4, 'prn_plan', marked.markedSeqs!) };
    },
    ['update parts set recallable = false where session_pk = 4 and seq <= 1000'],
    (q, i, all) =>
      firstTwoAndLast(q, i, all) && (i === 0 || all.filter((x) => x.text === q.text).indexOf(q) < 2),
  );
}
if (only('behind')) {
  await record(
    'markRecallableBehind, compacted 100k session (pk 3): the next boundary 150 seqs on',
    async (tx) => {
      const { rows } = await tx.execute<{ boundary_seq: number }>(
        dsql`select boundary_seq from compactions where id = 'cmp_3'`,
      );
      return markRecallableBehind(tx, 3, Number(rows[0]!.boundary_seq) + 150);
    },
  );
  await record(
    'markRecallableBehind, never-compacted 100k session (pk 4): a first boundary at seq 1,001',
    (tx) => markRecallableBehind(tx, 4, 1_001),
  );
}
if (only('cache')) {
  await record('selectCacheBaseline, compacted 100k session (pk 3), a new summary', (tx) =>
    selectCacheBaseline(tx, 3, { pinSystemMessages: true }),
  );
  await record(
    "selectCacheBaseline, compacted 100k session (pk 3), a carried-over summary's prunes (prunedBy, changedFrom)",
    (tx) =>
      selectCacheBaseline(tx, 3, {
        pinSystemMessages: true,
        prunedBy: 'cmp_3',
        changedFrom: { seq: 99_950, idx: 1 },
      }),
  );
  await record(
    'selectCacheBaseline, never-compacted 100k session (pk 4), after a prune job (prunedBy)',
    async (tx) => {
      await prune(tx, 'prn_cache');
      return selectCacheBaseline(tx, 4, { pinSystemMessages: true, prunedBy: 'prn_cache' });
    },
    [],
    (q) => !/insert into part_prunes/.test(q.text),
  );
}
if (only('head')) {
  await record('selectCacheHead, compacted 100k session (pk 3), a new summary', (tx) =>
    selectCacheHead(tx, 3, { pinSystemMessages: true }),
  );
  await record(
    "selectCacheHead, compacted 100k session (pk 3), a carried-over summary's prunes (prunedBy, changedFrom)",
    (tx) =>
      selectCacheHead(tx, 3, {
        pinSystemMessages: true,
        prunedBy: 'cmp_3',
        changedFrom: { seq: 99_950, idx: 1 },
      }),
  );
  await record(
    'selectCacheHead, never-compacted 100k session (pk 4), after a prune job (prunedBy)',
    async (tx) => {
      await prune(tx, 'prn_cache');
      return selectCacheHead(tx, 4, { pinSystemMessages: true, prunedBy: 'prn_cache' });
    },
    [],
    (q) => !/insert into part_prunes/.test(q.text),
  );
}
if (only('revert')) {
  await record(
    "revertCompaction of the 100k session's only compaction (pk 3, cmp_3: restores the whole history)",
    (tx) =>
      revertCompaction(tx, { tenantId: 'scale', compactionId: 'cmp_3', at: new Date() }).then((r) => ({
        unpruned: r.unpruned,
        unclamped: r.unclamped,
      })),
  );
  const second = [
    `insert into compactions (id, session_pk, tenant_id, reason, strategy, status, attempts, fence, covers_through_seq, boundary_seq, summary_message_ids, requested_at, started_at, finished_at)
     values ('cmp_3b', 3, 'scale', 'auto', 'truncate', 'completed', 1, 1, 100001, 99901, '{}', now(), now(), now() + interval '1 minute')`,
    `insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
     select session_pk, seq, idx, now(), 'cmp_3b' from parts where session_pk = 3 and type = 'tool' and seq between 99851 and 99950`,
  ];
  await record(
    'revertCompaction of a second compaction (pk 3, cmp_3b: boundary 99,901, pruned seqs 99,851–99,950)',
    (tx) =>
      revertCompaction(tx, { tenantId: 'scale', compactionId: 'cmp_3b', at: new Date() }).then((r) => ({
        unpruned: r.unpruned,
        unclamped: r.unclamped,
      })),
    second,
  );
  await record(
    "(before) the previous purged-history check, the only compaction's revert (restored 0, undone 99,801)",
    (tx) =>
      tx
        .execute(
          dsql`
    select exists (
      select 1 from messages m
      where m.session_pk = ${3} and m.purged_at is not null and not m.summary
        and m.seq >= ${0}::int
        and m.seq < ${99_801}::int
    ) or exists (
      select 1 from parts p
      where p.session_pk = ${3} and p.purged_at is not null and p.seq >= ${0}::int
        and p.type = 'tool'
        and not exists (select 1 from part_prunes pp
                        where pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx)
    ) as purged`,
        )
        .then((r) => r.rows[0]),
  );
  await record(
    '(before) the previous removePruneMarks statement, same second compaction',
    (tx) =>
      tx
        .execute(dsql`delete from part_prunes where session_pk = ${3} and compacted_by = ${'cmp_3b'}`)
        .then((r) => r.rowCount),
    second,
  );
}
if (only('prepared')) {
  await record(
    'prepared_summaries, compacted 100k session (pk 3): request, find, begin, save, end',
    async (tx) => {
      const requested = await requestPreparedSummary(tx, {
        sessionPk: 3,
        id: 'prep_plan',
        baseCompactionId: 'cmp_3',
        headroomTokens: 5_000,
        jobName: 'prepare',
      });
      const found = await findPreparedSummary(tx, 3);
      const begun = await beginPreparedSummary(tx, 3, 'prep_plan', 100_001);
      const saved = await savePreparedSummary(tx, 3, 'prep_plan', {
        settingsKey: 'k',
        cutSeq: 99_950,
        outcome: { version: 2 },
        model: 'gpt-4o-mini',
        usageInput: 1,
        usageOutput: 1,
        costUsd: 0,
        preparedAt: new Date(),
      });
      await endPreparedSummary(tx, 3, 'prep_plan', 'skipped', 'replaced');
      return { requested: requested !== null, found: found?.status, begun: begun !== null, saved };
    },
  );
}

for (const path of paths) await replay(path);
writeFileSync(process.env.PLANS_OUT ?? 'docs/plans/recall-flags-revert-cache-100k.txt', out.join('\n'));
await pool.end();
