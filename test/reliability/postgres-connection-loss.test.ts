import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
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

    const terminated: number[] = [];
    for (let round = 0; round < TERMINATIONS; round++) {
      await waitForRunning(db, ids, 2, 25);
      const result = await db.execute<{ terminated: boolean }>(sql`
        select pg_terminate_backend(pid) as terminated from pg_stat_activity
        where datname = ${database.name} and application_name = 'compactor-worker'
      `);
      terminated.push(result.rows.filter((r) => r.terminated).length);
      await sleep(700);
    }
    expect(
      terminated.every((n) => n > 0),
      `backends terminated per round: ${terminated.join(',')}`,
    ).toBe(true);

    const rows = await waitForTerminal(db, ids, 60_000);
    await expectAllCompletedByLlm(db, rows, sessions, { maxAttempts: ATTEMPTS });

    // The terminations hit work in progress: some tries failed on a lost connection and were retried.
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
