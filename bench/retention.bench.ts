/**
 * The retention purge at production size (issue 10): one tenant's 100,000-message session
 * compacted to its newest 200 (99,800 superseded messages, 2 KB tool outputs) beside other
 * tenants' 100 sessions × 1,000 messages in the same tables. Times the dry run and `--apply` (in
 * a transaction rolled back), batch by batch: a batch must cost what its rows cost, the same at
 * the end of the session as at the start. Baseline in the same process: the whole purge as one
 * statement (what batching trades for short locks). The plans of a batch halfway through are
 * printed (`EXPLAIN (ANALYZE, BUFFERS)`, after the earlier batches re-run in its transaction).
 *
 *   npm run bench -- retention
 */
import { applyRetentionPurge, createDatabase, planRetentionPurge, type PurgeBatch } from '@compactor/db';
import { dropDatabase, freshDatabase } from './processes';
import { explain, QueryRecorder, shortSql, type RecordedQuery } from './scale/plans';
import { createOutputCorpus, seedTimed, settle, tableSizes } from './scale/seed';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_retention';
const GOAL_GROWTH = 1.5;

await freshDatabase(URL);
const database = createDatabase(URL, { statementTimeoutMs: 0, applicationName: 'compactor-bench-retention' });
const { db, pool } = database;
const recorder = new QueryRecorder(pool);
class Rollback extends Error {}

/** `--apply` in a transaction that is rolled back: each batch's time and the statements sent. */
async function applyRolledBack(batchSize?: number) {
  const batches: Array<PurgeBatch & { ms: number }> = [];
  const started = performance.now();
  let last = started;
  const { queries, error } = await recorder.record(() =>
    db.transaction(async (tx) => {
      await applyRetentionPurge(tx, scope, {
        ...(batchSize ? { batchSize } : {}),
        onBatch: (batch) => {
          const now = performance.now();
          batches.push({ ...batch, ms: now - last });
          last = now;
        },
      });
      throw new Rollback();
    }),
  );
  if (!(error instanceof Rollback)) throw error;
  return { batches, totalMs: performance.now() - started, queries };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const scope = { tenantId: 'retention', createdBefore: new Date(Date.now() + 86_400_000) };

try {
  await createOutputCorpus(pool);
  const own = await seedTimed(pool, {
    tenantId: 'retention',
    idPrefix: 'compacted-100k-',
    sessions: 1,
    messages: 100_000,
    outputChars: 2_000,
    keep: 200,
  });
  const others = await seedTimed(pool, {
    tenantId: 'other',
    idPrefix: 'other-',
    sessions: 100,
    messages: 1_000,
    outputChars: 2_000,
    keep: 200,
  });
  await settle(pool);
  console.log(`seeded in ${((own.ms + others.ms) / 1000).toFixed(1)} s: ${await tableSizes(pool)}\n`);

  const started = performance.now();
  const dryRun = await recorder.record(() => planRetentionPurge(db, scope));
  const [planned] = dryRun.result ?? [];
  console.log(
    `dry run: ${(performance.now() - started).toFixed(0)} ms, would purge ${planned?.supersededMessages} messages ` +
      `(${planned?.supersededParts} parts) and ${planned?.prunedOutputs} pruned outputs, ${((planned?.bytes ?? 0) / 1e6).toFixed(1)} MB`,
  );

  const batched = await applyRolledBack();
  const superseded = batched.batches.filter((b) => b.kind === 'superseded').map((b) => b.ms);
  const first = median(superseded.slice(0, 10));
  const lastTen = median(superseded.slice(-10));
  const growth = lastTen / first;
  console.log(
    `--apply, batches of 1,000: ${(batched.totalMs / 1000).toFixed(2)} s in ${batched.batches.length} batches; ` +
      `superseded batches: first ten median ${first.toFixed(1)} ms, last ten ${lastTen.toFixed(1)} ms ` +
      `(${growth.toFixed(2)}×, goal ≤ ${GOAL_GROWTH}×: ${growth <= GOAL_GROWTH ? 'met' : 'NOT met'})`,
  );

  const whole = await applyRolledBack(200_000);
  console.log(
    `baseline, the same purge as one statement per kind: ${(whole.totalMs / 1000).toFixed(2)} s ` +
      `(batched / one statement ${(batched.totalMs / whole.totalMs).toFixed(2)}×)`,
  );

  // The plan of the superseded batch halfway through, with the batches before it re-run first.
  const statements = batched.queries.filter((q) => /update messages m set purged_at/.test(q.text));
  const middle = Math.floor(statements.length / 2);
  const halfway: RecordedQuery | undefined = statements[middle];
  if (halfway) {
    const plan = await explain(pool, halfway, statements.slice(0, middle));
    console.log(
      `\nplan of superseded batch ${middle + 1} of ${statements.length}: ${shortSql(halfway.text, 100)}`,
    );
    console.log(
      `  ${plan.summary?.executionMs.toFixed(1)} ms, ${plan.summary?.buffers} buffers; ${plan.summary?.scans.join('; ')}`,
    );
    if (process.env.BENCH_PLANS === '1') console.log(plan.text);
  }
  const counted = dryRun.queries.find((q) => /superseded_parts/.test(q.text));
  if (counted) {
    const plan = await explain(pool, counted);
    console.log(
      `plan of the dry run's count (reads the superseded range once: what it reports): ${plan.summary?.executionMs.toFixed(1)} ms, ${plan.summary?.buffers} buffers; ${plan.summary?.scans.join('; ')}`,
    );
    if (process.env.BENCH_PLANS === '1') console.log(plan.text);
  }
  const pruned = batched.queries.find((q) => /update parts p set tool_output = null, purged_at/.test(q.text));
  if (pruned) {
    const plan = await explain(pool, pruned, statements);
    console.log(
      `plan of the pruned-outputs batch: ${plan.summary?.executionMs.toFixed(1)} ms, ${plan.summary?.buffers} buffers; ${plan.summary?.scans.join('; ')}`,
    );
    if (process.env.BENCH_PLANS === '1') console.log(plan.text);
  }
  process.exitCode = growth <= GOAL_GROWTH ? 0 : 1;
} finally {
  await database.close();
  await dropDatabase(URL);
}
