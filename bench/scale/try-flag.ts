/**
 * The recall flagging of a prune's marks on the kept scale database's never-compacted session:
 * `npx tsx bench/scale/try-flag.ts` (BENCH_DATABASE_URL; BENCH_UNFLAG_SEQS: seqs below it are
 * unflagged first, their recall arguments cleared, so that many flags flip). Marks cleared at the end.
 */
import { loadavg } from 'node:os';
import { DEFAULT_POLICY } from '@compactor/core';
import { createDatabase, markPrunedRecallable, pruneToolOutputs } from '@compactor/db';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_scale';
const PK = Number(process.env.BENCH_SESSION_PK ?? 4);
const UNFLAG = Number(process.env.BENCH_UNFLAG_SEQS ?? 10_000);
const database = createDatabase(URL, { statementTimeoutMs: 0, applicationName: 'compactor-try-flag' });
const { db, pool } = database;
try {
  await pool.query('delete from part_prunes where session_pk = $1', [PK]);
  await pool.query(
    `update parts set recallable = false, recall_arguments = null where session_pk = $1 and seq < $2 and type = 'tool'`,
    [PK, UNFLAG],
  );
  const marked = await pruneToolOutputs(db, PK, {
    coversThroughSeq: 100_000,
    pinSystemMessages: true,
    pruning: DEFAULT_POLICY.pruning,
    at: new Date(),
    by: 'try-flag',
  });
  for (const [what, yieldRatio] of [
    ['flags flip', 0],
    ['nothing left to flip', 0],
  ] as const) {
    const started = performance.now();
    const flipped = await markPrunedRecallable(db, PK, 'try-flag', marked.markedSeqs!, undefined, {
      yieldRatio,
    });
    console.log(`${what}: ${flipped} flipped in ${(performance.now() - started).toFixed(0)} ms (pauses off)`);
  }
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await pool.query('delete from part_prunes where session_pk = $1', [PK]);
  await database.close();
}
