/**
 * The plans in docs/plans/context-delta-recall-flag-100k.txt: the context memo's read (db
 * `selectContextDelta`) and a compaction's recall flagging with the worker's words (db
 * `markRecallableBehind`, `flagWithWords`), on a scratch database of production size
 * (`npx tsx bench/scale/plans-context-delta.ts`): tenant `scale`, a 100k-message session
 * compacted to the newest 200 and a never-compacted one (bench/scale/seed.ts, ~2 KB outputs);
 * tenant `other`, 200 sessions of 1,000 messages. PLANS_SEED=0 reuses the database, PLANS_KEEP=1
 * keeps it, PLANS_OUT names the output (default: the docs file above).
 */
import { createDatabase, markRecallableBehind, selectContextDelta } from '@compactor/db';
import { dropDatabase, freshDatabase } from '../processes';
import { loadNow, pathRecorder } from './recorded-paths';
import { createOutputCorpus, seedSessions, settle } from './seed';

const URL =
  process.env.PLANS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_plans_delta';
const OUT = process.env.PLANS_OUT ?? 'docs/plans/context-delta-recall-flag-100k.txt';

if (process.env.PLANS_SEED !== '0') {
  await freshDatabase(URL);
  const seeding = createDatabase(URL, { statementTimeoutMs: 0 });
  const started = performance.now();
  await createOutputCorpus(seeding.pool);
  const base = { tenantId: 'scale', sessions: 1, messages: 100_000, outputChars: 2_048 };
  await seedSessions(seeding.pool, { ...base, idPrefix: 'compacted-100k-', keep: 200 });
  await seedSessions(seeding.pool, { ...base, idPrefix: 'raw-100k-', keep: null });
  const other = { tenantId: 'other', idPrefix: 'other-', sessions: 200, messages: 1_000 };
  await seedSessions(seeding.pool, { ...other, outputChars: 2_048, keep: 200 });
  await settle(seeding.pool);
  console.log(`seeded in ${((performance.now() - started) / 1000).toFixed(0)} s (load ${loadNow()})`);
  await seeding.close();
}

const { db, pool, close } = createDatabase(URL, { statementTimeoutMs: 0 });
const { record, write } = pathRecorder(db, pool);
const pkOf = async (id: string) =>
  Number((await pool.query<{ pk: string }>('select pk from sessions where id = $1', [id])).rows[0]!.pk);
const compacted = await pkOf('compacted-100k-1');
const raw = await pkOf('raw-100k-1');

const view = { pinSystemMessages: true };
const versions = (await selectContextDelta(db, compacted, { ...view, known: [] })).versions;
await record(
  `selectContextDelta, compacted 100k session (pk ${compacted}), a first read: nothing known`,
  (tx) => selectContextDelta(tx, compacted, { ...view, known: [] }).then((r) => r.messages.length),
);
await record(`selectContextDelta, the same view known but its newest message (the turn's append)`, (tx) =>
  selectContextDelta(tx, compacted, { ...view, known: versions.slice(0, -1) }).then((r) => r.messages.length),
);
await record(`selectContextDelta, the whole view known (nothing changed)`, (tx) =>
  selectContextDelta(tx, compacted, { ...view, known: versions }).then((r) => r.messages.length),
);
const boundary = Number(
  (
    await pool.query<{ seq: number }>(
      `select boundary_seq as seq from compactions where session_pk = $1 and status = 'completed'
       order by finished_at desc limit 1`,
      [compacted],
    )
  ).rows[0]!.seq,
);
await record(
  `markRecallableBehind, compacted 100k session: the next compaction moves the boundary ${boundary} → ${boundary + 150}`,
  (tx) => markRecallableBehind(tx, compacted, boundary + 150, undefined, boundary),
);
await record(
  `markRecallableBehind, never-compacted 100k session (pk ${raw}): a first boundary at seq 5,000 (10 windows of 500 seqs), its first window and its last`,
  (tx) => markRecallableBehind(tx, raw, 5_000, undefined, 0),
  (i, n) => i < 3 || i >= n - 3,
);

await write(OUT, [
  `-- The context memo's read and a compaction's recall flagging at 100k: EXPLAIN (ANALYZE, BUFFERS), ${new Date().toISOString().slice(0, 10)},`,
  '-- by `npx tsx bench/scale/plans-context-delta.ts` (it says what the database holds). Each statement runs in a transaction, rolled back.',
]);
await close();
if (process.env.PLANS_KEEP !== '1') await dropDatabase(URL);
