/**
 * One prune job on the kept scale database's never-compacted session, its statements timed apart:
 * `npx tsx bench/scale/try-prune.ts` (BENCH_DATABASE_URL; the session's marks are cleared first).
 */
import { DEFAULT_POLICY } from '@compactor/core';
import { createDatabase, pruneToolOutputs, selectCacheHead } from '@compactor/db';
import { pruneSession } from '@compactor/workflow';
import { loadavg } from 'node:os';
import { pruneResources } from './prune';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_scale';
const PK = Number(process.env.BENCH_SESSION_PK ?? 4);
const database = createDatabase(URL, { statementTimeoutMs: 0, applicationName: 'compactor-try-prune' });
const { db, pool } = database;
const clear = () => pool.query('delete from part_prunes where session_pk = $1', [PK]);
const time = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  const result = await work();
  console.log(`${what.padEnd(40)} ${(performance.now() - started).toFixed(1).padStart(9)} ms`);
  return result;
};
try {
  for (let run = 0; run < 3; run++) {
    await clear();
    const marked = await time('marks (pruneToolOutputs)', () =>
      pruneToolOutputs(db, PK, {
        coversThroughSeq: 100_000,
        pinSystemMessages: true,
        pruning: DEFAULT_POLICY.pruning,
        at: new Date(),
        by: `try-${run}`,
      }),
    );
    await time('cache head (selectCacheHead)', () =>
      selectCacheHead(db, PK, { pinSystemMessages: true, prunedBy: `try-${run}` }),
    );
    console.log(`  marked ${marked.parts} parts, saved ${marked.savedTokens} tokens`);
    await clear();
    await time('whole job (pruneSession)', () =>
      pruneSession(pruneResources(db), PK, { jobId: `job-${run}` }),
    );
  }
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await clear();
  await database.close();
}
