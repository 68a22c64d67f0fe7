/**
 * A test file's rig (`useReliabilityRig`: database, queue prefix, Redis, LLM stub, requester and
 * worker fleet) and the assertions the reliability tests share.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { createDatabase, type Database, type Db, type SessionRow } from '@compactor/db';
import { startLlmStub, type LlmStub, type LlmStubOptions } from '@compactor/llm-stub';
import { startCompaction } from '@compactor/queue';
import { useTestDatabase, type TestDatabase } from '@compactor/db/testing';
import { jobPolicy, sharedRedisUrl, uniqueHashTaggedPrefix, workerEnv } from './config';
import { stableContext, type ContextSample } from './context-check';
import { startPrivateRedis, startRedisCluster, useWorkerFleet, type WorkerFleet } from './fleet';
import { compactionStates, summaryMessageCounts, type CompactionState } from './records';
import { createRequester, seedCodingSessions, type Requester } from './seeding';

export interface RigOptions {
  /** Names the file's queue prefix (`{label-…}`). */
  label: string;
  /**
   * The workers' JOB_ATTEMPTS / JOB_BACKOFF_MS, and the job policy the requester enqueues with
   * (default 5 and 50 ms, `workerEnv`'s).
   */
  attempts?: number;
  backoffMs?: number;
  /** A redis-server of this file's own (FLUSHALL-able) instead of the shared one. */
  privateRedis?: boolean;
  /** A Redis Cluster of three masters of this file's own (`redis-cluster://` REDIS_URL). */
  redisCluster?: boolean;
  /** Worker environment on top of `workerEnv`'s defaults and the attempts/backoff above. */
  workerEnv?: Record<string, string>;
  /** How the LLM stub starts (e.g. with `faults`). */
  stub?: LlmStubOptions;
  /** The requester writes through a pool of its own of this size (default: the test database's pool). */
  requesterPool?: number;
  /** Whether closing the requester removes the prefix's queues from Redis (default true). */
  obliterateQueues?: boolean;
  /** Runs last in beforeAll, once everything is up. */
  setup?: (rig: ReliabilityRig) => Promise<unknown>;
  /** Runs in afterAll right after every worker is killed, before anything else closes. */
  teardown?: () => Promise<unknown>;
}

export interface ReliabilityRig {
  readonly database: TestDatabase;
  readonly prefix: string;
  readonly redisUrl: string;
  readonly stub: LlmStub;
  readonly requester: Requester;
  /** The database the requester writes through (its own pool with `requesterPool`). */
  readonly requesterDb: Db;
  readonly fleet: WorkerFleet;
  /** Requests a compaction of every session at once, the way the API does (`reason: 'manual'`). */
  requestCompactions(sessions: SessionRow[]): Promise<Array<Awaited<ReturnType<typeof startCompaction>>>>;
  /**
   * Seeds `count` coding sessions (`seedCodingSessions`), starts `workers` workers, then requests
   * a compaction of every session; returns the sessions and their compactions' ids, in order.
   */
  compactCodingSessions(options: {
    count: number;
    firstSeed: number;
    workers: number;
  }): Promise<{ sessions: SessionRow[]; ids: string[] }>;
}

/**
 * Everything a reliability test file runs against, set up in beforeAll and torn down in afterAll
 * (workers killed first, the database dropped last). Call once at the top level of a test file;
 * read the fields inside tests or hooks.
 */
export function useReliabilityRig(options: RigOptions): ReliabilityRig {
  const { attempts = 5, backoffMs = 50 } = options;
  const database = useTestDatabase();
  const prefix = uniqueHashTaggedPrefix(options.label);
  let redis: { url: string; stop(): Promise<void> } | undefined;
  let stub: LlmStub | undefined;
  let pool: Database | undefined;
  let requester: Requester | undefined;
  const ownRedis = options.privateRedis === true || options.redisCluster === true;
  const redisUrl = () => (ownRedis ? started(redis).url : sharedRedisUrl());
  const fleet = useWorkerFleet(() =>
    workerEnv({
      databaseUrl: database.url,
      redisUrl: redisUrl(),
      prefix,
      llmUrl: started(stub).url,
      JOB_ATTEMPTS: String(attempts),
      JOB_BACKOFF_MS: String(backoffMs),
      ...options.workerEnv,
    }),
  );

  const rig: ReliabilityRig = {
    database,
    prefix,
    fleet,
    get redisUrl() {
      return redisUrl();
    },
    get stub() {
      return started(stub);
    },
    get requester() {
      return started(requester);
    },
    get requesterDb() {
      return pool ? pool.db : database.db;
    },
    async requestCompactions(sessions) {
      const { deps } = rig.requester;
      return Promise.all(sessions.map((s) => startCompaction(deps, s, { reason: 'manual' })));
    },
    async compactCodingSessions({ count, firstSeed, workers }) {
      const sessions = await seedCodingSessions(database.db, count, { firstSeed });
      await fleet.spawnMany(workers);
      const requested = await rig.requestCompactions(sessions);
      return { sessions, ids: requested.map((r) => r.compaction.id) };
    },
  };

  beforeAll(async () => {
    if (options.redisCluster) redis = await startRedisCluster();
    else if (options.privateRedis) redis = await startPrivateRedis();
    stub = await startLlmStub(options.stub);
    if (options.requesterPool !== undefined) {
      pool = createDatabase(database.url, { max: options.requesterPool, applicationName: 'compactor-test' });
    }
    requester = createRequester(rig.requesterDb, redisUrl(), prefix, jobPolicy(attempts, backoffMs));
    await options.setup?.(rig);
  });

  afterAll(async () => {
    await fleet.killAll();
    await options.teardown?.();
    await requester?.close({ obliterate: options.obliterateQueues ?? true });
    await pool?.close();
    await stub?.close();
    await redis?.stop();
  });

  return rig;
}

function started<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('useReliabilityRig(): only inside tests and hooks');
  return value;
}
// ---------------------------------------------------------------------------------------------
// Assertions shared by the tests
// ---------------------------------------------------------------------------------------------

/** No worker exited without the harness signalling it. */
export function expectNoWorkerDiedOnItsOwn(fleet: WorkerFleet, message?: string): void {
  expect(
    fleet.diedOnTheirOwn.map((h) => h.id),
    message,
  ).toEqual([]);
}

/** Polls (up to 20 s) until at least `atLeast` of these compactions are running. */
export async function waitForRunning(
  db: Db,
  ids: string[],
  atLeast: number,
  intervalMs: number,
): Promise<void> {
  await expect
    .poll(async () => (await compactionStates(db, ids)).filter((r) => r.status === 'running').length, {
      timeout: 20_000,
      interval: intervalMs,
    })
    .toBeGreaterThanOrEqual(atLeast);
}

/** The compaction's summary messages are stored: as many as it names, one of them the summary text. */
export function expectSummaryStored(
  summaries: Awaited<ReturnType<typeof summaryMessageCounts>>,
  row: CompactionState,
): void {
  expect(summaries.get(row.id), row.id).toEqual({
    total: row.summary_message_ids.length,
    summaryText: 1,
  });
}

/** The session's (stable) context view: no problem found, and it matches `expected`. */
export async function expectContext(
  db: Db,
  sessionPk: number,
  label: string,
  expected: Partial<ContextSample>,
): Promise<ContextSample> {
  const view = await stableContext(db, sessionPk);
  expect(view.problems, label).toEqual([]);
  expect(view).toMatchObject(expected);
  return view;
}

/**
 * Every compaction completed with an LLM summary (within `maxAttempts` tries, when given), its
 * summary messages are stored, and every session's context view applies a compaction.
 */
export async function expectAllCompletedByLlm(
  db: Db,
  rows: CompactionState[],
  sessions: SessionRow[],
  options: { maxAttempts?: number } = {},
): Promise<void> {
  for (const row of rows) {
    expect(row, row.id).toMatchObject({ status: 'completed', error_code: null });
    expect(row.details.writtenBy, row.id).toBe('llm');
    if (options.maxAttempts !== undefined) {
      expect(row.attempts, row.id).toBeLessThanOrEqual(options.maxAttempts);
    }
  }
  const summaries = await summaryMessageCounts(db);
  for (const row of rows) expectSummaryStored(summaries, row);
  for (const session of sessions) await expectContext(db, session.pk, session.id, { state: 'compacted' });
}
