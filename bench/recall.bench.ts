/**
 * Recall: searching what compaction took out of the view should cost what the matches cost, not
 * the session or other tenants' rows. One database, seeded set-based (bench/scale/seed.ts):
 * sessions of 1k, 10k and 100k messages compacted to the newest 200 (outputs before the newest
 * 150 pruned), and 200 other tenants' sessions of 1,000 messages holding the same words. Timed:
 *  - `searchRecall` for a word found once in each session (`module502`: one assistant text), for
 *    a frequent word and a rare one together (`module 501`), and for a word in every user message
 *    (`module`: its cost follows its ~50,000 matches at 100k, by design);
 *  - `findRecallCall` by call id;
 *  - the baseline: the session's pre-boundary history and pruned outputs loaded and filtered in JS;
 *  - a one-message append with and without the recall indexes (the cost they add to appends).
 * Then `EXPLAIN (ANALYZE, BUFFERS)` of the search at 100k (BENCH_PLANS_FILE, default
 * docs/plans/recall-100k.txt). `npm run bench -- recall`. Exits non-zero if a goal fails.
 * BENCH_DATABASE_URL, BENCH_KEEP_DATABASE=1 (do not drop the database at the end).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PgDialect } from 'drizzle-orm/pg-core';
import {
  createDatabase,
  findRecallCall,
  searchRecall,
  searchRecallSql,
  type RecallSearchOptions,
} from '@compactor/db';
import { timingRow, type Timing } from './harness';
import { dropDatabase, freshDatabase } from './processes';
import { appendOne, assistantMessage, removeAppended } from './scale/paths';
import { Goals, measureAsync, measureInterleaved, ratio } from './scale/report';
import { createOutputCorpus, seedTimed, settle, tableSizes } from './scale/seed';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_recall';
const PLANS_FILE =
  process.env.BENCH_PLANS_FILE ?? join(import.meta.dirname, '..', 'docs', 'plans', 'recall-100k.txt');
const SIZES = [1_000, 10_000, 100_000] as const;
const KEEP = 200;
const RUNS = 50;
const BASELINE_RUNS: Record<number, number> = { 1_000: 20, 10_000: 5, 100_000: 3 };
const APPEND_RUNS = 100;
const GOAL_MS = 50;
/** "Flat": the 100k median within this factor of the 1k median. */
const FLAT_FACTOR = 3;

const label = (messages: number) => `${messages / 1000}k`;
const search = (query: string): RecallSearchOptions => ({
  query,
  limit: 5,
  excerptChars: 1_000,
  pinSystemMessages: true,
});

await freshDatabase(URL);
const database = createDatabase(URL, { statementTimeoutMs: 0, applicationName: 'compactor-bench-recall' });
const { db, pool } = database;
const goals = new Goals();

// Seeding row by row into the GIN index took 8 minutes for the other tenants alone: the
// indexes are built once the rows are in (as the migration builds them on an existing table).
// The seeded history is flagged `recallable` as an existing database's is: by the migration's
// backfill (parts behind the boundary and pruned outputs), run with it.
const RECALL_INDEXES = ['parts_recall_search_idx', 'parts_session_call_idx'];
// Migration 0030 stores the words and indexes them instead: run after 0016 (whose backfill flags the
// history), as a migrated database has it; its backfill gives the flagged parts their words.
const migrationSql = ['0016_recall_index.sql', '0030_recall_words_column.sql']
  .map((file) => readFileSync(join(import.meta.dirname, '..', 'packages', 'db', 'migrations', file), 'utf8'))
  .join('\n')
  .replaceAll('--> statement-breakpoint', '');
await pool.query(RECALL_INDEXES.map((name) => `drop index ${name};`).join(' '));
await createOutputCorpus(pool);
const others = await seedTimed(pool, {
  tenantId: 'other',
  idPrefix: 'other-',
  sessions: 200,
  messages: 1_000,
  outputChars: 2_048,
  keep: KEEP,
});
console.log(`seeded 200 other tenants' sessions of 1,000 messages   ${(others.ms / 1000).toFixed(1)} s`);
const sessions = new Map<number, number>();
for (const messages of SIZES) {
  const seeded = await seedTimed(pool, {
    tenantId: 'bench',
    idPrefix: `recall-${label(messages)}-`,
    sessions: 1,
    messages,
    outputChars: 2_048,
    keep: KEEP,
  });
  sessions.set(messages, seeded.pks[0]!);
  console.log(`seeded a ${label(messages)}-message session`.padEnd(54), `${(seeded.ms / 1000).toFixed(1)} s`);
}
const indexing = performance.now();
await pool.query(migrationSql);
console.log(
  `built the recall indexes (migrations 0016, 0030)`.padEnd(54),
  `${((performance.now() - indexing) / 1000).toFixed(1)} s`,
);
await settle(pool);
console.log(await tableSizes(pool));
const indexSizes = await pool.query<{ name: string; size: string }>(
  `select relname as name, pg_size_pretty(pg_relation_size(oid)) as size from pg_class where relname = any($1)`,
  [RECALL_INDEXES],
);
console.log(indexSizes.rows.map((r) => `${r.name} ${r.size}`).join(', '));

/** The pre-boundary history and pruned outputs of a session, loaded and filtered in JS. */
async function baselineSearch(sessionPk: number, word: string): Promise<number> {
  const { rows } = await pool.query<{ doc: string }>(
    `with bounds as (
       select coalesce(boundary_seq, 0) as first_kept from compactions
       where session_pk = $1 and status = 'completed' order by finished_at desc limit 1)
     select coalesce(p.text, p.tool_output, p.tool_error, '') as doc
     from parts p join messages m on m.pk = p.message_pk
     left join part_prunes pp on pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx
     where p.session_pk = $1 and p.purged_at is null
       and (pp.seq is not null or (p.seq < (select first_kept from bounds) and not m.summary and m.role <> 'system'))`,
    [sessionPk],
  );
  const needle = word.toLowerCase();
  return rows.filter((row) => row.doc.toLowerCase().includes(needle)).length;
}

const figures = new Map<string, Timing[]>();
async function timeAcrossSizes(
  name: string,
  work: (pk: number) => Promise<unknown>,
): Promise<Timing[] | undefined> {
  const timings = await goals.step(name, () =>
    measureInterleaved(
      RUNS,
      SIZES.map((messages) => () => work(sessions.get(messages)!)),
    ),
  );
  timings?.forEach((timing, i) => console.log(timingRow(`${name} ${label(SIZES[i]!)}`, timing, 8)));
  if (timings) figures.set(name, timings);
  return timings;
}

// Each session finds the one passage, and no other session's (they all hold the word).
for (const messages of SIZES) {
  const hits = await searchRecall(db, sessions.get(messages)!, search('module502'));
  goals.check(
    `search ${label(messages)}: exactly its own passage`,
    hits.length,
    (n) => n === 1 && hits[0]!.seq === 502,
    `${hits.length} hit(s), seq ${hits.map((h) => h.seq).join(', ')}`,
  );
}

// A pruned output in the kept window (its seq's number starts it): found, as cleared.
const clearedSeq = (messages: number) => messages - KEEP + 2;
for (const messages of SIZES) {
  const hits = await searchRecall(db, sessions.get(messages)!, search(String(clearedSeq(messages))));
  goals.check(
    `search ${label(messages)}: a cleared output in the view`,
    hits.length,
    (n) => n === 1 && hits[0]!.source === 'cleared' && hits[0]!.seq === clearedSeq(messages),
    `${hits.length} hit(s), ${hits.map((h) => `${h.source} seq ${h.seq}`).join(', ')}`,
  );
}

const rare = await timeAcrossSizes('search "module502"', (pk) => searchRecall(db, pk, search('module502')));
await timeAcrossSizes('search "module 501"', (pk) => searchRecall(db, pk, search('module 501')));
await timeAcrossSizes('search "module" (every user message)', (pk) => searchRecall(db, pk, search('module')));
await timeAcrossSizes('recall call_502 by id', (pk) => findRecallCall(db, pk, 'call_502'));

const baseline: Timing[] = [];
for (const messages of SIZES) {
  const timing = await measureAsync(
    BASELINE_RUNS[messages]!,
    () => baselineSearch(sessions.get(messages)!, 'module502'),
    1,
  );
  baseline.push(timing);
  console.log(timingRow(`baseline: load and filter in JS ${label(messages)}`, timing, 8));
}
SIZES.forEach((messages, i) =>
  console.log(
    `baseline / search "module502" ${label(messages)}: ${ratio(baseline[i]?.median, rare?.[i]?.median)}`,
  ),
);

if (rare) {
  const [small, , large] = rare;
  goals.check(
    `search at 100k: median under ${GOAL_MS} ms`,
    large!.median,
    (v) => v < GOAL_MS,
    `${large!.median.toFixed(2)} ms`,
  );
  goals.check(
    `search flat from 1k to 100k (within ${FLAT_FACTOR}×)`,
    large!.median / small!.median,
    (v) => v < FLAT_FACTOR,
    ratio(large!.median, small!.median),
  );
}

// What the indexes add to an append: one assistant message (a text and a ~2 KB output), on the
// 100k session, with the recall indexes, without them, and with them again (machine drift).
const big = sessions.get(100_000)!;
const lastSeq = Number(
  (await pool.query('select last_seq from sessions where pk = $1', [big])).rows[0].last_seq,
);
async function timeAppends(): Promise<Timing> {
  const timing = await measureAsync(APPEND_RUNS, () => appendOne(db, big, assistantMessage()));
  await removeAppended(pool, big, lastSeq);
  return timing;
}
const withIndexes = await timeAppends();
await pool.query(RECALL_INDEXES.map((name) => `drop index ${name};`).join(' '));
const withoutIndexes = await timeAppends();
await pool.query(migrationSql);
const withIndexesAgain = await timeAppends();
console.log(timingRow('append 1 assistant message, recall indexes', withIndexes, 8));
console.log(timingRow('append 1 assistant message, no recall indexes', withoutIndexes, 8));
console.log(timingRow('append 1 assistant message, indexes again', withIndexesAgain, 8));

// The plans of the search at 100k, as the service sends it (parameters bound): a summarized
// passage, a cleared output in the view, and a word in every user message.
const planText: string[] = [];
for (const query of ['module502', String(clearedSeq(100_000)), 'module']) {
  const compiled = new PgDialect().sqlToQuery(searchRecallSql(big, search(query)));
  const plan = await pool.query<{ 'QUERY PLAN': string }>(
    `explain (analyze, buffers) ${compiled.sql}`,
    compiled.params as unknown[],
  );
  planText.push(
    `-- searchRecall at 100k messages, query "${query}" (npm run bench -- recall)`,
    ...plan.rows.map((r) => r['QUERY PLAN']),
    '',
  );
}
writeFileSync(PLANS_FILE, planText.join('\n'));
console.log(`plan written to ${PLANS_FILE}`);

await database.close();
if (process.env.BENCH_KEEP_DATABASE !== '1') await dropDatabase(URL);
goals.summarize();
