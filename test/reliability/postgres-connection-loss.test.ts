import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  compactionStates,
  expectAllCompletedByLlm,
  expectNoWorkerDiedOnItsOwn,
  useReliabilityRig,
  waitForRunning,
  waitForTerminal,
} from './harness';

/**
 * The workers lose their Postgres connections mid-run (`pg_terminate_backend` on every backend
 * of the worker pools, several times): the failed statements surface as transient errors, the
 * jobs retry, and every compaction completes — with its LLM summary, not a fallback.
 */

const COMPACTIONS = 20;
const ATTEMPTS = 5;
const TERMINATIONS = 3;

const rig = useReliabilityRig({
  label: 'rel-pgloss',
  attempts: ATTEMPTS,
  workerEnv: { WORKER_CONCURRENCY: '4' },
});
const { database, fleet } = rig;

describe('Postgres connection loss', () => {
  it('retries the jobs whose connections were terminated and completes every compaction', async () => {
    const db = database.db;
    rig.stub.setFaults({ latencyMs: 400 });
    const { sessions, ids } = await rig.compactCodingSessions({
      count: COMPACTIONS,
      firstSeed: 200,
      workers: 2,
    });

    // Each round holds the compactions' rows in another transaction: a worker's next write to
    // one waits on the lock, a statement in progress on its connection, and terminating the
    // backends then hits work in progress for certain (terminating only idle pooled connections
    // fails nothing). A round starts only while work is left to interrupt.
    const terminated: number[] = [];
    const waitingWorkers = async () =>
      (
        await db.execute<{ n: number }>(sql`
          select count(*)::int as n from pg_stat_activity
          where datname = ${database.name} and application_name = 'compactor-worker'
            and wait_event_type = 'Lock'`)
      ).rows[0]!.n;
    const allEnded = async () =>
      (await compactionStates(db, ids)).every((r) => r.status !== 'pending' && r.status !== 'running');
    await waitForRunning(db, ids, 2, 25);
    for (let round = 0; round < TERMINATIONS && !(await allEnded()); round++) {
      const holder = await database.database.pool.connect();
      try {
        await holder.query('begin');
        await holder.query('select 1 from compactions where id = any($1::text[]) for update', [ids]);
        // Workers waiting on the lock, or (a race at the end) nothing left to wait.
        await expect
          .poll(async () => (await waitingWorkers()) > 0 || (await allEnded()), {
            timeout: 20_000,
            interval: 25,
          })
          .toBe(true);
        if ((await waitingWorkers()) === 0) break;
        const result = await db.execute<{ terminated: boolean }>(sql`
          select pg_terminate_backend(pid) as terminated from pg_stat_activity
          where datname = ${database.name} and application_name = 'compactor-worker'
        `);
        terminated.push(result.rows.filter((r) => r.terminated).length);
      } finally {
        await holder.query('rollback');
        holder.release();
      }
      await sleep(300);
    }
    expect(
      terminated.length > 0 && terminated.every((n) => n > 0),
      `backends terminated per round: ${terminated.join(',')}`,
    ).toBe(true);

    const rows = await waitForTerminal(db, ids, 60_000);
    await expectAllCompletedByLlm(db, rows, sessions, { maxAttempts: ATTEMPTS });

    // The terminations hit work in progress: tries failed on a lost connection and were retried.
    const failedSteps = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from compaction_steps where status = 'failed'`,
    );
    const retried = rows.filter((r) => r.attempts > 1).length;
    const tryFailures = fleet.jsonLogs().filter((l) => l.msg === 'job try failed');
    console.info(
      `postgres connection loss: terminated ${terminated.join('+')} backends; ${retried} compactions retried, ` +
        `${failedSteps.rows[0]!.n} step records failed, ${tryFailures.length} job tries failed ` +
        `(${[...new Set(tryFailures.map((l) => String(l.err)))].join(' | ')})`,
    );
    expect(retried + tryFailures.length).toBeGreaterThan(0);
    expectNoWorkerDiedOnItsOwn(fleet);
  }, 90_000);
});
