import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionRow } from '@compactor/db';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { startCompaction } from '@compactor/queue';
import { useTestDatabase } from '@compactor/testing';
import { generateCodingSession } from '@compactor/testing/fixtures';
import {
  compactionStates,
  createRequester,
  jobPolicy,
  seedSession,
  sharedRedisUrl,
  stableContext,
  summaryMessageCounts,
  uniqueHashTaggedPrefix,
  useWorkerFleet,
  waitForTerminal,
  workerEnv,
  type Requester,
} from './harness';

/**
 * The workers lose their Postgres connections mid-run (`pg_terminate_backend` on every backend
 * of the worker pools, several times): the failed statements surface as transient errors, the
 * jobs retry, and every compaction completes — with its LLM summary, not a fallback.
 */

const COMPACTIONS = 20;
const ATTEMPTS = 5;
const BACKOFF_MS = 50;
const TERMINATIONS = 3;

const database = useTestDatabase();
const prefix = uniqueHashTaggedPrefix('rel-pgloss');
let stub: LlmStub | undefined;
let requester: Requester | undefined;
const fleet = useWorkerFleet(() =>
  workerEnv({
    databaseUrl: database.url,
    redisUrl: sharedRedisUrl(),
    prefix,
    llmUrl: stub!.url,
    WORKER_CONCURRENCY: '4',
    JOB_ATTEMPTS: String(ATTEMPTS),
    JOB_BACKOFF_MS: String(BACKOFF_MS),
  }),
);

beforeAll(async () => {
  stub = await startLlmStub();
  requester = createRequester(database.db, sharedRedisUrl(), prefix, jobPolicy(ATTEMPTS, BACKOFF_MS));
});

afterAll(async () => {
  await fleet.killAll();
  await requester?.close();
  await stub?.close();
});

describe('Postgres connection loss', () => {
  it('retries the jobs whose connections were terminated and completes every compaction', async () => {
    const db = database.db;
    stub!.setFaults({ latencyMs: 400 });
    const sessions: SessionRow[] = [];
    for (let i = 0; i < COMPACTIONS; i++) {
      sessions.push(await seedSession(db, generateCodingSession({ turns: 3 + (i % 2), seed: 200 + i })));
    }
    await fleet.spawnMany(2);
    const requested = await Promise.all(
      sessions.map((s) => startCompaction(requester!.deps, s, { reason: 'manual' })),
    );
    const ids = requested.map((r) => r.compaction.id);

    const terminated: number[] = [];
    for (let round = 0; round < TERMINATIONS; round++) {
      await expect
        .poll(async () => (await compactionStates(db, ids)).filter((r) => r.status === 'running').length, {
          timeout: 20_000,
          interval: 25,
        })
        .toBeGreaterThanOrEqual(2);
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
    for (const row of rows) {
      expect(row, row.id).toMatchObject({ status: 'completed', error_code: null });
      expect(row.details.writtenBy, row.id).toBe('llm');
      expect(row.attempts, row.id).toBeLessThanOrEqual(ATTEMPTS);
    }
    const summaries = await summaryMessageCounts(db);
    for (const row of rows) {
      expect(summaries.get(row.id), row.id).toEqual({
        total: row.summary_message_ids.length,
        summaryText: 1,
      });
    }
    for (const session of sessions) {
      const view = await stableContext(db, session.pk);
      expect(view.problems, session.id).toEqual([]);
      expect(view.state).toBe('compacted');
    }

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
    expect(fleet.diedOnTheirOwn.map((h) => h.id)).toEqual([]);
  }, 90_000);
});
