/**
 * Scale (issue 8): every hot path should cost what the kept window costs, not what the history
 * or other tenants' rows cost. One database, seeded set-based (bench/scale/seed.ts):
 *  - sessions of 1k, 10k and 100k messages, each compacted to the newest 200, whose context
 *    read, status and one-message appends are timed beside a load-everything baseline, and the
 *    PATCH that finishes a streamed turn on its own;
 *  - a never-compacted 100k-message session (~50k tool outputs of ~2 KB) to prune and to read;
 *  - 200,000 messages of other tenants, then 2,000,000 more (phase 2) to check nothing grows.
 * Prune's marks are timed beside marking the same parts one INSERT each, the recall flagging
 * after them apart (bench/scale/prune.ts). Then
 * `EXPLAIN (ANALYZE, BUFFERS)` of every statement the hot paths send at 100k (bench/scale/plans.ts),
 * and of a compaction's reads and requests (bench/scale/compaction-plans.ts).
 * `npm run bench -- scale`. Exits non-zero if a goal fails.
 * BENCH_DATABASE_URL, BENCH_OTHER_GROWTH (messages added in phase 2, 0 skips it),
 * BENCH_PLANS_FILE (where plans go), BENCH_PLANS=1 (print them too), BENCH_KEEP_DATABASE=1 (do not
 * drop the 2.5 GB database at the end).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, loadContextRows, sessionStatusInputs } from '@compactor/db';
import { timingRow, type Timing } from './harness';
import { dropDatabase, freshDatabase } from './processes';
import {
  pathBuffers,
  pathRecorder,
  QueryRecorder,
  writePlans,
  type RecordedPath,
  type RecordedQuery,
} from './scale/plans';
import {
  appendOne,
  assistantMessage,
  baselineContext,
  baselineStatus,
  finishStreamed,
  readContext,
  readStatus,
  removeAppended,
  streamedAssistantMessage,
  userMessage,
  verifyContext,
  verifyStatus,
} from './scale/paths';
import { recordCompactionPaths } from './scale/compaction-plans';
import { measurePrune, prunePlanPath, referenceSelection, timePrune } from './scale/prune';
import { Goals, measureAsync, measureInterleaved, ms, quietest, ratio } from './scale/report';
import { createOutputCorpus, settle, seedTimed, tableSizes, type SessionShape } from './scale/seed';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_scale';
/** Other tenants' sessions of 1,000 messages: 200 at first, then phase 2 adds OTHER_GROWTH messages. */
const OTHER_SESSIONS = 200;
const OTHER_GROWTH = Number(process.env.BENCH_OTHER_GROWTH ?? 2_000_000);
const GROWN = `other tenants ×${((OTHER_SESSIONS * 1_000 + OTHER_GROWTH) / (OTHER_SESSIONS * 1_000)).toFixed(0)}`;
const PLANS_FILE = process.env.BENCH_PLANS_FILE ?? join(tmpdir(), 'compactor-bench-scale-plans.txt');
const SIZES = [1_000, 10_000, 100_000] as const;
const KEEP = 200;
const OUTPUT_CHARS = 2_048;
/** Sub-millisecond paths need many runs for a stable median; the baseline reads whole histories. */
const FAST_RUNS = 50;
const BASELINE_RUNS: Record<number, { runs: number; warmup: number }> = {
  1_000: { runs: 20, warmup: 3 },
  10_000: { runs: 5, warmup: 1 },
  // ~10 s per load of 100k messages with their outputs: the earlier sizes warmed the process up.
  100_000: { runs: 3, warmup: 0 },
};
const PRUNE_RUNS = 3;

const label = (messages: number) => `${messages / 1000}k`;

const startedAt = performance.now();
/** Time spent seeding and settling, reported apart from the run's total. */
let seedingMs = 0;

await freshDatabase(URL);
const database = createDatabase(URL, { statementTimeoutMs: 0, applicationName: 'compactor-bench-scale' });
const { db, pool } = database;
const recorder = new QueryRecorder(pool);
const goals = new Goals();

/** Seeds one group of sessions, printing how long it took. */
async function seed(what: string, shape: SessionShape): Promise<number[]> {
  const { pks, ms: took } = await seedTimed(pool, shape);
  seedingMs += took;
  console.log(`seeded ${what.padEnd(58)} ${(took / 1000).toFixed(1).padStart(6)} s`);
  return pks;
}

/** Vacuum, analyze and checkpoint after seeding; counted as seeding time. */
async function settleTimed(): Promise<void> {
  const started = performance.now();
  await settle(pool);
  seedingMs += performance.now() - started;
}

type FastPath = 'context' | 'status' | 'appendUser' | 'appendAssistant' | 'patch';

/** Timings of one compacted session: ours per hot path, and the baseline's reads. */
interface SizeFigures {
  ours: Partial<Record<FastPath, Timing>>;
  baseline: Partial<Record<'context' | 'status', Timing>>;
}

/** Both reads of every compacted session checked against core's reference; the sizes that agree. */
async function verifyReads(sessions: Map<number, number>): Promise<Record<'context' | 'status', number[]>> {
  const agreed = { context: [] as number[], status: [] as number[] };
  for (const [messages, pk] of sessions) {
    const view = await goals.step(
      `context ${label(messages)}: same view as the reference`,
      () => verifyContext(db, pk),
      (n) => `${n} messages`,
    );
    if (view !== undefined) agreed.context.push(messages);
    const estimate = await goals.step(
      `status ${label(messages)}: same estimate as core`,
      () => verifyStatus(db, pk),
      (tokens) => `${tokens} tokens`,
    );
    if (estimate !== undefined) agreed.status.push(messages);
  }
  return agreed;
}

/** One hot path on several sessions, interleaved run by run, into `figures`. */
async function measureFast(
  path: FastPath,
  name: string,
  sizes: number[],
  sessions: Map<number, number>,
  figures: Map<number, SizeFigures>,
  work: (pk: number) => Promise<unknown>,
): Promise<void> {
  const timings = await goals.step(name, () =>
    measureInterleaved(
      FAST_RUNS,
      sizes.map((messages) => () => work(sessions.get(messages)!)),
    ),
  );
  timings?.forEach((timing, i) => {
    figures.get(sizes[i]!)!.ours[path] = timing;
    console.log(timingRow(`${name} ${label(sizes[i]!)}`, timing, 9));
  });
}

/** The baseline's reads of one session, printed beside ours. */
async function measureBaselines(messages: number, pk: number, figures: SizeFigures): Promise<void> {
  const { runs, warmup } = BASELINE_RUNS[messages]!;
  for (const [path, work] of [
    ['context', () => baselineContext(db, pk)],
    ['status', () => baselineStatus(db, pk)],
  ] as const) {
    const ours = figures.ours[path];
    if (!ours) continue;
    const baseline = await measureAsync(runs, work, warmup);
    figures.baseline[path] = baseline;
    console.log(
      `${timingRow(`${path} ${label(messages)} baseline (load all)`, baseline, 9)}   ours ${ratio(baseline.median, ours.median)} faster`,
    );
  }
}

type ReadPath = 'context' | 'status';
/** A read's timings around the growth phase, and whether its statements read as many buffers after. */
type GrowthFigures = Partial<Record<ReadPath, { before?: Timing; after?: Timing; sameBuffers: boolean }>>;

/**
 * The 100k session's reads just before and just after other tenants' rows grow (phase 2), the
 * same way both times (the quietest of five blocks of runs: minutes apart, a burst of other work
 * on the machine would decide the ratio), with the shared buffers their statements touch, which
 * say whether other sessions' rows are read whatever the timing says.
 */
async function measureGrowth(
  pk: number,
  figures: SizeFigures,
): Promise<{ paths: GrowthFigures; machine: number }> {
  const works = { context: () => readContext(db, pk), status: () => readStatus(db, pk) };
  const paths = (['context', 'status'] as const).filter((path) => figures.ours[path]);
  // A control that reads no table: if it slows down too, the machine did, not the queries.
  const control = () => pool.query('select count(*) from generate_series(1, 20000)');
  const snapshot = async (when: string) => {
    const taken: Partial<Record<ReadPath, { timing?: Timing; buffers?: number }>> = {};
    for (const path of paths) {
      const timing = await goals.step(`${path} 100k ${when}`, () =>
        quietest(5, () => measureAsync(FAST_RUNS, works[path])),
      );
      taken[path] = { timing, buffers: await pathBuffers(pool, recorder, works[path]) };
    }
    return { taken, control: await quietest(5, () => measureAsync(FAST_RUNS, control)) };
  };
  const before = await snapshot('before growth');
  const sessions = Math.round(OTHER_GROWTH / 1_000);
  const started = performance.now();
  await seed(`other tenants: ${sessions} more sessions × 1,000 messages, 256 B outputs`, {
    tenantId: 'other-growth',
    idPrefix: 'grown-',
    sessions,
    messages: 1_000,
    outputChars: 256,
    keep: KEEP,
  });
  await settleTimed();
  console.log(
    `phase 2 seeding ${((performance.now() - started) / 1000).toFixed(1)} s; ${await tableSizes(pool)}`,
  );
  const after = await snapshot('after growth');
  const result: GrowthFigures = {};
  const machine = after.control.median / before.control.median;
  console.log(
    `control (server work reading no table): median ${ms(before.control.median)} → ${ms(after.control.median)} (${machine.toFixed(2)}×)`,
  );
  for (const path of paths) {
    const [b, a] = [before.taken[path], after.taken[path]];
    const sameBuffers = b?.buffers !== undefined && a?.buffers !== undefined && a.buffers <= b.buffers * 1.05;
    result[path] = { before: b?.timing, after: a?.timing, sameBuffers };
    if (b?.timing) console.log(timingRow(`${path} 100k, before growth`, b.timing, 9));
    if (a?.timing) console.log(timingRow(`${path} 100k, ${GROWN}`, a.timing, 9));
    console.log(`${path} 100k: shared buffers of its statements ${b?.buffers ?? '?'} → ${a?.buffers ?? '?'}`);
  }
  return { paths: result, machine };
}

/** Records the SQL each hot path sends at 100k and writes its plans; prints one line per statement. */
async function recordPlans(pk: number, rawPk: number, prune: RecordedQuery[] | undefined): Promise<void> {
  const paths: RecordedPath[] = [];
  const record = pathRecorder(recorder, paths);
  await record('loadContextRows', () => loadContextRows(db, pk));
  await record('sessionStatusInputs (status: stats and compactions)', () => sessionStatusInputs(db, pk));
  // Each append statement is re-run as it first ran: without the appended message, except the
  // parts insert, which needs its message (foreign key) but not its own parts (unique key).
  const lastSeq = SIZES[2] + 1;
  const append = await record('appendToSession (an API append), assistant + tool part', () =>
    appendOne(db, pk, assistantMessage()),
  );
  append.setup = (query) => [
    /^insert into "parts"/.test(query.text)
      ? { text: 'delete from parts where session_pk = $1 and seq > $2', values: [pk, lastSeq] }
      : { text: 'delete from messages where session_pk = $1 and seq > $2', values: [pk, lastSeq] },
  ];
  // The PATCH's statements only update and read: re-run as they are, the turn stays finished.
  const streamed = streamedAssistantMessage();
  await appendOne(db, pk, streamed);
  await record('patchMessage (finish a streamed turn: tool result, finish, usage)', () =>
    finishStreamed(db, pk, streamed),
  );
  if (prune) paths.push(prunePlanPath(prune));
  paths.push(
    ...(await recordCompactionPaths(pool, db, recorder, {
      raw: rawPk,
      compacted: pk,
      tenant: 'scale',
      otherTenant: 'other',
      messages: SIZES[2],
    })),
  );

  await writePlans(pool, paths, PLANS_FILE, process.env.BENCH_PLANS === '1');
  await removeAppended(pool, pk, lastSeq);
}

try {
  // Seeding.
  const seedStart = performance.now();
  await createOutputCorpus(pool);
  const compacted = new Map<number, number>();
  for (const messages of SIZES) {
    const [pk] = await seed(`${label(messages)} messages, compacted to the newest ${KEEP}`, {
      tenantId: 'scale',
      idPrefix: `compacted-${label(messages)}-`,
      sessions: 1,
      messages,
      outputChars: OUTPUT_CHARS,
      keep: KEEP,
    });
    compacted.set(messages, pk!);
  }
  const [raw] = await seed('100k messages, never compacted', {
    tenantId: 'scale',
    idPrefix: 'raw-100k-',
    sessions: 1,
    messages: 100_000,
    outputChars: OUTPUT_CHARS,
    keep: null,
  });
  await seed(`other tenants: ${OTHER_SESSIONS} sessions × 1,000 messages, 2 KB outputs`, {
    tenantId: 'other',
    idPrefix: 'other-',
    sessions: OTHER_SESSIONS,
    messages: 1_000,
    outputChars: OUTPUT_CHARS,
    keep: KEEP,
  });
  await settleTimed();
  console.log(
    `seeding total ${((performance.now() - seedStart) / 1000).toFixed(1)} s; ${await tableSizes(pool)}\n`,
  );

  // Context read, status and appends: ours interleaved across sizes, then the baselines.
  const figures = new Map(
    SIZES.map((messages): [number, SizeFigures] => [messages, { ours: {}, baseline: {} }]),
  );
  const agreed = await verifyReads(compacted);
  console.log('');
  await measureFast('context', 'context read', agreed.context, compacted, figures, (pk) =>
    readContext(db, pk),
  );
  await measureFast('status', 'status', agreed.status, compacted, figures, (pk) => readStatus(db, pk));
  await measureFast('appendUser', 'append user', [...SIZES], compacted, figures, (pk) =>
    appendOne(db, pk, userMessage()),
  );
  await measureFast('appendAssistant', 'append assistant + tool', [...SIZES], compacted, figures, (pk) =>
    appendOne(db, pk, assistantMessage()),
  );
  // Each PATCH finishes a turn appended beforehand (warm-up runs included), so only the PATCH is timed.
  const streamed = new Map<number, ReturnType<typeof streamedAssistantMessage>[]>();
  for (const pk of compacted.values()) {
    const turns = Array.from({ length: FAST_RUNS + 3 }, () => streamedAssistantMessage());
    for (const turn of turns) await appendOne(db, pk, turn);
    streamed.set(pk, turns);
  }
  await measureFast('patch', 'patch (finish a streamed turn)', [...SIZES], compacted, figures, (pk) =>
    finishStreamed(db, pk, streamed.get(pk)!.shift()!),
  );
  // The appended turns go again: later measurements see the sessions as seeded.
  for (const [messages, pk] of compacted) await removeAppended(pool, pk, messages + 1);
  for (const [messages, pk] of compacted) await measureBaselines(messages, pk, figures.get(messages)!);

  // Reading a never-compacted 100k session (once failed past 65,535 bind parameters).
  await goals.step(
    'never-compacted 100k session can be read (no failure at 65,536)',
    async () => {
      const started = performance.now();
      const rows = await loadContextRows(db, raw!);
      if (rows.messages.length !== 100_000)
        throw new Error(`read ${rows.messages.length} messages, not 100,000`);
      return performance.now() - started;
    },
    (took) => `loadContextRows in ${ms(took)}`,
  );
  const bench = { db, pool, goals, recorder };
  const prune = await measurePrune(bench, raw!, PRUNE_RUNS);

  // Phase 2: other tenants grow tenfold; the 100k session's reads must not notice.
  const { paths: tenants, machine } =
    OTHER_GROWTH > 0
      ? await measureGrowth(compacted.get(100_000)!, figures.get(100_000)!)
      : { paths: {} as GrowthFigures, machine: 1 };
  if (OTHER_GROWTH > 0) {
    // Not a goal: whether prune, timed above with fewer other rows, notices them.
    const selection = await referenceSelection(pool, raw!);
    const again = await timePrune(bench, raw!, PRUNE_RUNS, selection, ` (${GROWN})`);
    if (again.median !== undefined) console.log(`prune 100k, ${GROWN}: marks median ${ms(again.median)}`);
  }

  await recordPlans(compacted.get(100_000)!, raw!, prune);

  // Goals, on medians.
  const small = figures.get(1_000)!.ours;
  const big = figures.get(100_000)!;
  const times = (a?: Timing, b?: Timing) => (a && b ? b.median / a.median : undefined);
  const shown = (value: number | undefined, from?: Timing, to?: Timing) =>
    `${value?.toFixed(2)}× (${ms(from?.median ?? 0)} → ${ms(to?.median ?? 0)})`;
  console.log('');
  for (const path of ['context', 'status'] as const) {
    const name = path === 'context' ? 'context read' : 'status';
    const faster = times(big.ours[path], big.baseline[path]);
    goals.check(
      `${name} 100k ≥ 100× faster than the baseline`,
      faster,
      (v) => v >= 100,
      `${faster?.toFixed(0)}×`,
    );
    const growth = times(small[path], big.ours[path]);
    goals.check(
      `${name} growth 1k → 100k ≤ 1.5×`,
      growth,
      (v) => v <= 1.5,
      shown(growth, small[path], big.ours[path]),
    );
    if (OTHER_GROWTH > 0) {
      const { before, after, sameBuffers } = tenants[path] ?? {};
      const raw = times(before, after);
      // The control reads no table: when it slowed down as well, the machine did. Its slowdown
      // is taken out, but only while the statements read no more buffers than before (then
      // the extra time cannot be other tenants' rows) and never to flatter (a speed-up counts 1).
      const discount = sameBuffers ? Math.max(1, machine) : 1;
      const grown = raw === undefined ? undefined : raw / discount;
      const goal = `${name} 100k after ${GROWN} ≤ 1.5×`;
      const note = discount > 1 ? ` raw ${raw?.toFixed(2)}×, machine ${discount.toFixed(2)}× slower` : '';
      goals.check(goal, grown, (v) => v <= 1.5, `${shown(grown, before, after)}${note}`);
    }
  }
  for (const [name, path] of [
    ['append user', 'appendUser'],
    ['append assistant + tool', 'appendAssistant'],
    ['patch (finish a streamed turn)', 'patch'],
  ] as const) {
    const growth = times(small[path], big.ours[path]);
    goals.check(
      `${name}: 100k ≤ 1.5× 1k`,
      growth,
      (v) => v <= 1.5,
      shown(growth, small[path], big.ours[path]),
    );
  }
} finally {
  await database.close();
  // 2.5 GB: kept only when asked for (to inspect plans by hand).
  if (process.env.BENCH_KEEP_DATABASE !== '1') await dropDatabase(URL);
}
goals.summarize();
const total = (performance.now() - startedAt) / 1000;
console.log(`run time ${total.toFixed(0)} s, of which seeding ${(seedingMs / 1000).toFixed(0)} s`);
