/**
 * The durable workflow's own cost and throughput (issue 7), measured against what bounds it.
 * Each part is a file of bench/workflow/:
 *  1a. CPU per compaction of a 300-message window with a zero-latency LLM stub, in the process
 *      running it and in its Postgres backends, with its round trips and statements
 *      (compaction-cpu-part.ts; `BENCH_BASELINE_REF=<commit>` measures that commit's packages
 *      too, alternating, `BENCH_CPU_ROUNDS` rounds of `BENCH_CPU_SESSIONS` (30) compactions, 5 of them warm-up);
 *  1b. compactions/s of one worker process beside BullMQ's no-op job throughput (throughput.ts);
 *  2.  LLM-bound throughput: stub latency 500 ms, one worker process with concurrency 64, against
 *      the 128/s bound over a backlog of `BENCH_LLM_BOUND_COMPACTIONS` (llm-bound.ts);
 *  3.  peak worker RSS compacting a never-compacted session of `BENCH_RSS_MESSAGES` (0 skips),
 *      by default and with the heap capped at `BENCH_RSS_HEAP_MIB` (0 skips) (worker-rss.ts);
 *  4.  scale-out: part 2's load over 1, 2 and 3 worker processes (llm-bound.ts).
 * `npm run bench -- workflow`; `BENCH_PARTS=1a,1b,2,3,4` picks parts; `BENCH_CPU_PROFILE=file`
 * profiles part 1a's measured compactions, `BENCH_CHILD_PROFILE_DIR=dir` the worker processes.
 */
import { createDatabase } from '@compactor/db';
import { createJobQueues } from '@compactor/queue';
import { deleteQueueKeys } from '@compactor/stack';
import { noEvents, silentLog } from '@compactor/workflow';
import { dropDatabase, freshDatabase, startStubProcess } from './processes';
import { compactionCpuPart } from './workflow/compaction-cpu-part';
import { llmBoundParts, type Dispatcher } from './workflow/llm-bound';
import { throughputPart } from './workflow/throughput';
import { workerRssPart } from './workflow/worker-rss';

const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_workflow';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const RSS_MESSAGES = Number(process.env.BENCH_RSS_MESSAGES ?? 100_000);
/** Part 3's second run caps the worker's V8 heap at this many MiB (0: no second run). */
const RSS_HEAP_MIB = Number(process.env.BENCH_RSS_HEAP_MIB ?? 384);
const PARTS = new Set((process.env.BENCH_PARTS ?? '1a,1b,2,3,4').split(','));
const connection = { url: REDIS_URL, maxRetriesPerRequest: null };

await freshDatabase(DATABASE_URL);
const database = createDatabase(DATABASE_URL, {
  statementTimeoutMs: 0,
  applicationName: 'compactor-bench',
  max: 20,
});
const { db } = database;
const fastStub = await startStubProcess();
/** Every queue prefix this run used: their keys are deleted at the end, whatever happened. */
const usedPrefixes = new Set<string>();
const dispatcher: Dispatcher = {
  workerEnv: (prefix, concurrency) => {
    usedPrefixes.add(prefix);
    return {
      DATABASE_URL,
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      WORKER_CONCURRENCY: String(concurrency),
      OPENAI_BASE_URL: fastStub.url,
      OPENAI_API_KEY: 'stub',
      LOG_LEVEL: 'warn',
    };
  },
  dispatch: (prefix) => {
    usedPrefixes.add(prefix);
    return {
      db,
      queues: createJobQueues({ connection, prefix }),
      events: noEvents,
      log: silentLog,
      clock: () => new Date(),
    };
  },
};

try {
  if (PARTS.has('1a'))
    await compactionCpuPart({
      databaseUrl: DATABASE_URL,
      redisUrl: REDIS_URL,
      stubUrl: fastStub.url,
      prefix: (name) => {
        const prefix = `{bench-${name}-${Date.now()}}`;
        usedPrefixes.add(prefix);
        return prefix;
      },
    });
  if (PARTS.has('1b')) await throughputPart(db, REDIS_URL, dispatcher);
  if (PARTS.has('2') || PARTS.has('4')) await llmBoundParts(db, dispatcher, PARTS);
  if (PARTS.has('3') && RSS_MESSAGES > 0)
    await workerRssPart(db, dispatcher, RSS_MESSAGES, RSS_HEAP_MIB > 0 ? [RSS_HEAP_MIB] : []);
} finally {
  await fastStub.stop();
  await database.close();
  // The run's own database (BENCH_KEEP_DATABASE=1 keeps it to look into afterwards).
  if (process.env.BENCH_KEEP_DATABASE !== '1')
    await dropDatabase(DATABASE_URL).catch((error: Error) =>
      console.error(`could not drop the bench's database: ${error.message}`),
    );
  for (const prefix of usedPrefixes) {
    // A cleanup failure (Redis gone) must not hide the benchmark's own error.
    await deleteQueueKeys(REDIS_URL, prefix).catch((error: Error) =>
      console.error(`could not delete the keys of ${prefix}: ${error.message}`),
    );
  }
}
