/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of a prune job's statements on the kept scale database's
 * never-compacted session, each rolled back: `npx tsx bench/scale/explain-prune.ts`
 * (BENCH_DATABASE_URL, BENCH_SESSION_PK; BENCH_MATCH=regex picks statements).
 */
import { createDatabase } from '@compactor/db';
import { pruneSession } from '@compactor/workflow';
import { loadavg } from 'node:os';
import { explain, QueryRecorder, shortSql } from './plans';
import { pruneResources } from './prune';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_scale';
const PK = Number(process.env.BENCH_SESSION_PK ?? 4);
const MATCH = new RegExp(process.env.BENCH_MATCH ?? '.', 'i');
const database = createDatabase(URL, { statementTimeoutMs: 0, applicationName: 'compactor-explain-prune' });
const { db, pool } = database;
const recorder = new QueryRecorder(pool);
try {
  await pool.query('delete from part_prunes where session_pk = $1', [PK]);
  const { queries, error } = await recorder.record(() =>
    pruneSession(pruneResources(db), PK, { jobId: 'explain-prune' }),
  );
  if (error) throw error;
  const marks = queries.find((q) => /insert into part_prunes/i.test(q.text));
  let flagging = 0;
  for (const query of queries) {
    if (/update parts p set recallable/i.test(query.text) && flagging++ > 0) continue;
    if (!MATCH.test(query.text)) continue;
    // Later statements see the marks: the prune statement is re-run before them, rolled back too.
    const unmarked = { text: 'delete from part_prunes where session_pk = $1', values: [PK] };
    const setup =
      query === marks
        ? [unmarked]
        : marks && queries.indexOf(query) > queries.indexOf(marks)
          ? [unmarked, marks]
          : [];
    const { text } = await explain(pool, query, setup);
    console.log(
      `== ${shortSql(query.text, 200)}\n-- params: ${JSON.stringify(query.values).slice(0, 300)}\n${text}\n`,
    );
  }
  console.log(
    `-- load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await pool.query('delete from part_prunes where session_pk = $1', [PK]);
  await database.close();
}
