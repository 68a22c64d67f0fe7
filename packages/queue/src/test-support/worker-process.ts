/**
 * A worker process for tests that kill one: the catalog's workers ({@link startWorkers}) on the
 * test's database, queue prefix and LLM, until the test SIGKILLs it. Started by
 * `startKillableWorker` (killable-worker.ts) with its settings as one JSON argument; writes
 * `ready` on stdout once its workers are connected. When the test process dies, stdin closes and
 * it exits instead of living on.
 */
import { Redis } from 'ioredis';
import { createDatabase } from '@compactor/db';
import { createLlm } from '@compactor/llm';
import { silentLog } from '@compactor/workflow';
import { redisEventPublisher } from '../events/session-events';
import type { JobPolicy } from '../jobs/catalog';
import { startWorkers } from '../worker/workers';

/** What the test hands the process. */
export interface WorkerProcessSettings {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  llmUrl: string;
  policy: JobPolicy;
  lockDurationMs: number;
  stalledIntervalMs: number;
}

const settings = JSON.parse(process.argv[2] ?? '') as WorkerProcessSettings;
process.stdin.on('end', () => process.exit(70));
process.stdin.resume();
process.stdin.unref();

const database = createDatabase(settings.databaseUrl, { max: 4, applicationName: 'compactor-test-worker' });
const redis = new Redis(settings.redisUrl);
const running = startWorkers(
  {
    db: database.db,
    llm: createLlm({ apiKey: 'stub', baseURL: settings.llmUrl, timeoutMs: 120_000 }),
    clock: () => new Date(),
    log: silentLog,
    events: redisEventPublisher(redis, settings.prefix),
  },
  {
    connection: { url: settings.redisUrl, maxRetriesPerRequest: null },
    prefix: settings.prefix,
    policy: settings.policy,
    concurrency: 4,
    lockDurationMs: settings.lockDurationMs,
    stalledIntervalMs: settings.stalledIntervalMs,
  },
);
await Promise.all(running.workers.map((worker) => worker.waitUntilReady()));
process.stdout.write('ready\n');
