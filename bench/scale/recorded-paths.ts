/**
 * Plans of recorded paths, for the scripts that write docs/plans/*-100k.txt: each path's
 * statements are recorded from the pool while it runs in a transaction that is rolled back,
 * then each is replayed under EXPLAIN (ANALYZE, BUFFERS) in a transaction of its own, rolled
 * back too, after the path's setup statements.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import type { Db } from '@compactor/db';
import { QueryRecorder, type RecordedQuery } from './plans';

interface Path {
  name: string;
  /** Run first in each statement's transaction (rolled back with it). */
  setup: string[];
  queries: RecordedQuery[];
}

class Rollback extends Error {}

export const loadNow = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

export function pathRecorder(db: Db, pool: pg.Pool) {
  const recorder = new QueryRecorder(pool);
  const paths: Path[] = [];
  return {
    /** Runs `work` rolled back and keeps its statements (those `keep` picks) under `name`. */
    async record(
      name: string,
      work: (tx: Db) => Promise<unknown>,
      keep = (_i: number, _n: number) => true,
      setup: string[] = [],
    ): Promise<void> {
      const { queries, error } = await recorder.record(() =>
        db.transaction(async (tx) => {
          for (const statement of setup) await tx.execute(sql.raw(statement));
          const result = await work(tx as unknown as Db);
          console.log(
            `${name}: ${JSON.stringify(result, (_k, v: unknown) => (v instanceof Uint8Array ? `${v.byteLength} bytes` : v))?.slice(0, 200)}`,
          );
          throw new Rollback();
        }),
      );
      if (error && !(error instanceof Rollback)) throw error;
      const statements = queries.filter(
        (q) => !setup.includes(q.text) && !/^\s*(savepoint|release|rollback)/i.test(q.text),
      );
      paths.push({ name, setup, queries: statements.filter((_q, i) => keep(i, statements.length)) });
    },
    /** Replays every recorded statement under EXPLAIN (ANALYZE, BUFFERS) into `file`, after `header`. */
    async write(file: string, header: string[]): Promise<void> {
      const out = [...header];
      const client = await pool.connect();
      try {
        for (const path of paths) {
          for (const [i, q] of path.queries.entries()) {
            await client.query('begin');
            for (const statement of path.setup) await client.query(statement);
            const res = await client.query<{ 'QUERY PLAN': string }>(
              `explain (analyze, buffers) ${q.text}`,
              q.values,
            );
            await client.query('rollback');
            const lines = res.rows.map((r) => r['QUERY PLAN']);
            const exec = lines.find((l) => l.startsWith('Execution Time'));
            const top = lines.find((l) => /^\s*Buffers:/.test(l))?.trim();
            const summary = `${exec} | ${top} | load ${loadNow()}`;
            console.log(`  ${path.name} #${i + 1}: ${summary}`);
            out.push(
              '',
              `== ${path.name} (statement ${i + 1} of ${path.queries.length}): ${summary}`,
              ...path.setup.map((statement) => `-- setup, in the same transaction: ${statement}`),
              q.text.trim(),
              `-- params: ${JSON.stringify(q.values).slice(0, 400)}`,
              ...lines,
            );
          }
        }
      } finally {
        client.release();
      }
      writeFileSync(file, `${out.join('\n')}\n`);
    },
  };
}
