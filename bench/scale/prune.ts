/**
 * Prune of a never-compacted session: the queue's `pruneSession` beside the baseline that marks
 * the same parts one statement each, and a reference selection to check ours against.
 */
import { DEFAULT_POLICY } from '@compactor/core';
import type { Db } from '@compactor/db';
import { createLlm } from '@compactor/llm';
import { pruneSession, silentLog, type WorkflowResources } from '@compactor/workflow';
import type pg from 'pg';
import type { QueryRecorder, RecordedPath, RecordedQuery } from './plans';
import { mib, ms, ratio, withPeakRss, type Goals } from './report';

/** A part to mark, as `part_prunes` keys it. */
export interface PrunedPart {
  seq: number;
  idx: number;
}

/** What pruneSession needs to prune; the LLM client is never called by a prune. */
export function pruneResources(db: Db): WorkflowResources {
  return {
    db,
    llm: createLlm({ apiKey: 'unused', baseURL: 'http://127.0.0.1:9', timeoutMs: 1_000 }),
    clock: () => new Date(),
    log: silentLog,
  };
}

/**
 * OpenCode's selection (core `selectPrunableParts`) with the default policy, in SQL, for a
 * session with no summary and nothing pruned yet (this benchmark's never-compacted one): skip
 * what follows the `protectUserTurns`-th newest user message, keep the newest `protectTokens`
 * output tokens, take every older completed output of an unprotected tool, and only if they save
 * more than `minimumTokens`.
 */
export async function referenceSelection(pool: pg.Pool, sessionPk: number): Promise<PrunedPart[]> {
  const { protectTokens, minimumTokens, protectedTools, protectUserTurns } = DEFAULT_POLICY.pruning;
  const result = await pool.query<{ seq: number; idx: number; output_tokens: number }>(
    `with active as (
       select coalesce((select seq from messages where session_pk = $1 and role = 'user'
                        order by seq desc offset greatest($2::int - 1, 0) limit 1), 0) as from_seq,
              $2::int = 0 as none
     ),
     walked as (
       select p.seq, p.idx, p.output_tokens,
              sum(p.output_tokens) over (order by p.seq desc, p.idx desc) as scanned
       from parts p, active a
       where p.session_pk = $1 and p.type = 'tool' and p.tool_status = 'completed'
         and p.tool <> all($3::text[]) and (a.none or p.seq <= a.from_seq)
     )
     select seq, idx, output_tokens from walked where scanned > $4 order by seq, idx`,
    [sessionPk, protectUserTurns, protectedTools, protectTokens],
  );
  const saved = result.rows.reduce((sum, r) => sum + r.output_tokens, 0);
  return saved > minimumTokens ? result.rows.map(({ seq, idx }) => ({ seq, idx })) : [];
}

/** Forgets every prune of the session, so the next run prunes the same parts again. */
export async function clearPrunes(pool: pg.Pool, sessionPk: number): Promise<void> {
  await pool.query('delete from part_prunes where session_pk = $1', [sessionPk]);
}

/** How the session's marks differ from `expected`: parts missing and parts marked in excess. */
export async function compareMarks(
  pool: pg.Pool,
  sessionPk: number,
  expected: PrunedPart[],
): Promise<{ missing: number; extra: number }> {
  const result = await pool.query<{ missing: number; extra: number }>(
    `with expected as (select * from unnest($2::int[], $3::int[]) e(seq, idx)),
          marked as (select seq, idx from part_prunes where session_pk = $1)
     select (select count(*) from (select * from expected except select * from marked) x)::int as missing,
            (select count(*) from (select * from marked except select * from expected) x)::int as extra`,
    [sessionPk, expected.map((p) => p.seq), expected.map((p) => p.idx)],
  );
  return result.rows[0]!;
}

/**
 * The baseline: one `INSERT` per part, awaited in turn (a prepared statement on one connection).
 * In one transaction by default, so it does not also pay a commit per part; `autocommit` makes
 * each its own transaction, as a loop of ORM calls would. Returns milliseconds.
 */
export async function markOneByOne(
  pool: pg.Pool,
  sessionPk: number,
  selection: PrunedPart[],
  { autocommit = false } = {},
): Promise<number> {
  const client = await pool.connect();
  try {
    const started = performance.now();
    if (!autocommit) await client.query('begin');
    const at = new Date();
    for (const part of selection) {
      await client.query({
        name: 'bench-prune-one',
        text: 'insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by) values ($1, $2, $3, $4, $5)',
        values: [sessionPk, part.seq, part.idx, at, 'bench-baseline'],
      });
    }
    if (!autocommit) await client.query('commit');
    return performance.now() - started;
  } catch (error) {
    if (!autocommit) await client.query('rollback');
    throw error;
  } finally {
    client.release();
  }
}

/** Parts the autocommit baseline marks (about 1 ms each with a WAL flush per commit). */
const AUTOCOMMIT_SAMPLE = 2_000;

/** What the prune measurement works with. */
export interface PruneBench {
  db: Db;
  pool: pg.Pool;
  goals: Goals;
  recorder: QueryRecorder;
}

/** Our prune, several times from the same unpruned state, then the one-statement-per-part baseline. */
export async function measurePrune(
  bench: PruneBench,
  pk: number,
  runs: number,
): Promise<RecordedQuery[] | undefined> {
  const { pool, goals } = bench;
  const selection = await referenceSelection(pool, pk);
  console.log(
    `\nprune of the never-compacted 100k session: reference selects ${selection.length} tool parts`,
  );
  const { median, growth, recorded, runs: timed } = await timePrune(bench, pk, runs, selection, '');
  reportFlagging(timed);
  // The goal's baseline is the issue's: one statement per part, as a naive service issues them
  // (each its own transaction; the UPDATE loop took ~1.2 ms a part). The whole run would
  // take minutes, so a sample is timed and extrapolated.
  const sample = selection.slice(0, AUTOCOMMIT_SAMPLE);
  const sampled = await markOneByOne(pool, pk, sample, { autocommit: true });
  await clearPrunes(pool, pk);
  const perPart = sampled / Math.max(1, sample.length);
  const baseline = perPart * selection.length;
  console.log(
    `baseline: one INSERT per part, each its own transaction: ${perPart.toFixed(3)} ms per part over ` +
      `${sample.length} parts ≈ ${(baseline / 1000).toFixed(1)} s for all`,
  );
  // For scale only (not the goal): the same statements in one transaction, which no service
  // would hold open for seconds, still pay a round trip and an index insert per part.
  const oneTransaction = await markOneByOne(pool, pk, selection);
  await clearPrunes(pool, pk);
  console.log(
    `  (the same ${selection.length} INSERTs in one transaction: ${ms(oneTransaction)}, ${ratio(oneTransaction, median)} ours)`,
  );
  // The goals are about the marks: the one statement (its commit included) after which the
  // served context no longer carries the outputs. The job's other work comes after it.
  goals.check(
    'prune ~50k tool parts < 250 ms (median)',
    median,
    (v) => v < 250,
    median === undefined ? '' : ms(median),
  );
  goals.check(
    'prune ≥ 50× faster than one statement per part',
    median === undefined ? undefined : baseline / median,
    (v) => v >= 50,
    `${ratio(baseline, median)} (baseline ≈ ${ms(baseline)})`,
  );
  goals.check(
    'prune peak RSS growth < 50 MiB',
    median === undefined ? undefined : growth,
    (v) => v < 50,
    mib(growth),
  );
  return recorded;
}

/** What one prune job's statements took, in ms (from the recorder: each statement's wall time). */
export interface PruneRunTimes {
  /** The whole `pruneSession`. */
  job: number;
  /** The prune statement: selection and marks, commit included (autocommit). */
  marks: number;
  /** `markPrunedRecallable`: its chunk statements, summed. */
  flagging: number;
  /** How many chunk statements it sent. */
  chunks: number;
}

const MARKS = /insert into part_prunes/i;
/** The flagging's statements: each chunk's read of the next marks, and its update when flags flip. */
const FLAGGING = /with chunk as materialized \(\s*select pp\.seq|update parts p set recallable = true/i;
const CHUNK = /with chunk as materialized \(\s*select pp\.seq/i;

function runTimes(queries: RecordedQuery[], job: number): PruneRunTimes {
  const sum = (pattern: RegExp) =>
    queries.filter((q) => pattern.test(q.text)).reduce((total, q) => total + (q.ms ?? 0), 0);
  return {
    job,
    marks: sum(MARKS),
    flagging: sum(FLAGGING),
    chunks: queries.filter((q) => CHUNK.test(q.text)).length,
  };
}

/**
 * Prints what the recall flagging after the marks took, not a goal: on the first run each
 * output's flag flips and the search index computes its words (the indexing recall needs, paid
 * once per output, off the served path); later runs find the outputs flagged already (clearing
 * the marks leaves the flags) and only read the marked parts.
 */
function reportFlagging(runs: PruneRunTimes[]): void {
  const [first, ...later] = runs;
  if (!first) return;
  console.log(
    `recall flagging after the marks (not a goal): run 1 ${ms(first.flagging)} in ${first.chunks} statements ` +
      `(flags flip, the search index computes the outputs' words)` +
      (later.length
        ? `; runs 2–${runs.length} ${later.map((r) => ms(r.flagging)).join(', ')} (nothing left to flip)`
        : ''),
  );
  const rest = (r: PruneRunTimes) => r.job - r.marks - r.flagging;
  console.log(
    `  whole prune job (pruneSession) ${runs.map((r) => ms(r.job)).join(', ')}; besides marks and ` +
      `flagging (session read, cache head, run record; after flags flipped, the flagging's pauses): ` +
      runs.map((r) => ms(rest(r))).join(', '),
  );
}

/**
 * The prune job's statements for their plans, each re-run after the prune statement (so the
 * flagging and the cache baseline find the marks they found); of the flagging's chunks, the
 * first two (the others are the same statement further on).
 */
export function prunePlanPath(queries: RecordedQuery[]): RecordedPath {
  const marks = queries.find((q) => MARKS.test(q.text));
  const chunks = queries.filter((q) => FLAGGING.test(q.text));
  return {
    name: 'pruneSession (never-compacted 100k session)',
    queries: queries.filter((q) => !FLAGGING.test(q.text) || chunks.indexOf(q) < 2),
    setup: (query) =>
      marks && query !== marks && queries.indexOf(query) > queries.indexOf(marks) ? [marks] : [],
  };
}

/**
 * Runs our prune `runs` times, each from the session unpruned: the median of the marks' times
 * (see {@link PruneRunTimes}), each run's times, the largest RSS growth of a run, and the first
 * run's statements (for their plans). Each run's marks are compared with the reference
 * selection; the first run's comparison is a goal.
 */
export async function timePrune(
  { db, pool, goals, recorder }: PruneBench,
  pk: number,
  runs: number,
  selection: PrunedPart[],
  when: string,
): Promise<{
  median: number | undefined;
  growth: number;
  recorded: RecordedQuery[] | undefined;
  runs: PruneRunTimes[];
}> {
  const times: PruneRunTimes[] = [];
  let growth = 0;
  let recorded: RecordedQuery[] | undefined;
  for (let run = 0; run < runs; run++) {
    await clearPrunes(pool, pk);
    // Each run starts where the first did, from a settled table: the run before it deleted 50,000
    // marks and flipped as many parts' flags, and until vacuumed, the walk's index-only scan visits
    // the heap for every part and the inserts step over the dead marks (what autovacuum clears in
    // a live database, where a session's outputs are not pruned, unpruned and pruned again).
    await pool.query('vacuum (analyze) part_prunes, parts');
    const started = performance.now();
    const outcome = await goals.step(`prune${when} run ${run + 1}`, async () => {
      const ran = await recorder.record(() =>
        withPeakRss(() => pruneSession(pruneResources(db), pk, { jobId: `bench-prune-${run}` })),
      );
      if (run === 0) recorded = ran.queries;
      if (ran.error) throw ran.error;
      return { ...ran.result!, queries: ran.queries };
    });
    if (!outcome) break;
    const took = runTimes(outcome.queries, performance.now() - started);
    times.push(took);
    growth = Math.max(growth, outcome.growthMiB);
    const marks = await compareMarks(pool, pk, selection);
    const differs = marks.missing || marks.extra;
    console.log(
      `prune${when} run ${run + 1}: marks ${ms(took.marks)} (job ${ms(took.job)}, of it recall flagging ` +
        `${ms(took.flagging)}), marked ${outcome.result.parts} parts ` +
        `(${outcome.result.tokens} tokens), RSS +${mib(outcome.growthMiB)}` +
        (differs ? `; vs reference: ${marks.missing} missing, ${marks.extra} extra` : ''),
    );
    if (run === 0) {
      goals.check(
        `prune${when} marks exactly the reference selection`,
        marks.missing + marks.extra,
        (v) => v === 0,
        `${marks.missing} missing, ${marks.extra} extra`,
      );
    }
  }
  await clearPrunes(pool, pk);
  const sorted = times.map((t) => t.marks).sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], growth, recorded, runs: times };
}
