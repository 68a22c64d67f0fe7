/**
 * The durable workflow's own cost and throughput (issue 7), measured against what bounds it:
 *  1. pipeline overhead with a zero-latency LLM stub: CPU per compaction of a 300-message
 *     window (in this process), and compactions/s of one worker process beside BullMQ's own
 *     no-op job throughput on the same Redis in the same run;
 *  2. LLM-bound throughput: stub latency 500 ms, one worker process with concurrency 64,
 *     against the 128/s bound, over a backlog of 1,920 compactions (BENCH_LLM_BOUND_COMPACTIONS),
 *     also over its first 640 finishes and in the steady state;
 *  3. peak worker RSS while compacting a 100,000-message session, by default and with a capped heap;
 *  4. scale-out: the LLM-bound load of part 2 over 1, 2 and 3 worker processes (issue 10).
 * `npm run bench -- workflow` (BENCH_RSS_MESSAGES=0 skips part 3, BENCH_RSS_HEAP_MIB sets the heap cap
 * of its second run, 0 skips that run; BENCH_CPU_PROFILE=file.cpuprofile
 * profiles part 1's measured compactions).
 */
import os from 'node:os';
import { Queue, Worker } from 'bullmq';
import pg from 'pg';
import type { Part } from '@compactor/core';
import {
  createDatabase,
  findCompaction,
  insertSession,
  newId,
  type Db,
  type NewMessage,
  type SessionRow,
} from '@compactor/db';
import { createLlm } from '@compactor/llm';
import { noEvents, runCompaction, silentLog } from '@compactor/workflow';
import { createJobQueues, startCompaction } from '@compactor/queue';
import { deleteQueueKeys } from '@compactor/stack';
import { sql } from 'drizzle-orm';
import { profiled } from './harness';
import { seedMessages } from './seed-messages';
import {
  cpuSecondsOf,
  freshDatabase,
  memoryOf,
  postgresCpuSeconds,
  startStubProcess,
  startWorkerProcess,
  type Child,
} from './processes';

const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_workflow';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const RSS_MESSAGES = Number(process.env.BENCH_RSS_MESSAGES ?? 100_000);
/** Part 3's second run caps the worker's V8 heap at this many MiB (0: no second run). */
const RSS_HEAP_MIB = Number(process.env.BENCH_RSS_HEAP_MIB ?? 384);
/** Which parts to run (`1a,1b,2,3`); all by default. */
const PARTS = new Set((process.env.BENCH_PARTS ?? '1a,1b,2,3,4').split(','));
const connection = { url: REDIS_URL, maxRetriesPerRequest: null };

/** Message `i` of a coding session: a user request, then an assistant turn reading a file. */
function message(i: number): NewMessage {
  const user = i % 2 === 0;
  const parts: Part[] = user
    ? [{ type: 'text', text: `please look at module ${i} and fix the failing test `.repeat(4), tokens: 44 }]
    : [
        { type: 'text', text: `Reading src/module${i}.ts`, tokens: 6 },
        {
          type: 'tool',
          callId: `call_${i}`,
          tool: 'read',
          status: 'completed',
          input: { path: `src/module${i}.ts` },
          output: `export const value${i} = compute(${i}); // line\n`.repeat(40),
          error: null,
          compactedAt: null,
          tokens: 570,
          outputTokens: 560,
        },
      ];
  return {
    id: `m${i}`,
    role: user ? 'user' : 'assistant',
    parts,
    finish: user ? null : 'stop',
    error: null,
    usage: null,
    createdAt: new Date(1_700_000_000_000 + i * 1000),
    metadata: {},
    contentHash: `h${i}`,
  };
}

async function seedSessions(db: Db, count: number, messages: number): Promise<SessionRow[]> {
  const sessions: SessionRow[] = [];
  for (let s = 0; s < count; s++) {
    const session = await insertSession(db, {
      tenantId: 'bench',
      id: newId('ses'),
      modelId: 'stub-summarizer',
      provider: 'stub',
      contextWindow: 128_000,
      maxOutputTokens: 8_000,
      // One summarizer call per compaction (no chunking) keeps part 2's bound exact.
      policy: { prune: true },
      createHash: 'bench',
    });
    for (let i = 0; i < messages; i += 1_000) {
      await seedMessages(
        db,
        session!,
        Array.from({ length: Math.min(1_000, messages - i) }, (_, k) => message(i + k)),
      );
    }
    sessions.push(session!);
  }
  return sessions;
}

async function waitUntilFinished(db: Db, ids: string[], timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const result = await db.execute<{ done: number; failed: number }>(sql`
      select count(*) filter (where status in ('completed', 'skipped', 'failed'))::int as done,
             count(*) filter (where status <> 'completed' and status not in ('pending', 'running'))::int as failed
      from compactions where id = any(${sql.param(ids)}::text[])`);
    const { done, failed } = result.rows[0]!;
    if (failed > 0) throw new Error(`${failed} compactions did not complete (failed or skipped)`);
    if (done === ids.length) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`only ${done}/${ids.length} finished`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** BullMQ alone: no-op jobs through one in-process worker, the queue's own ceiling on this machine. */
async function bullmqNoopThroughput(jobs: number, concurrency: number): Promise<number> {
  const prefix = `{bench-noop-${Date.now()}}`;
  const queue = new Queue('noop', { connection, prefix });
  let done = 0;
  let finished!: () => void;
  const all = new Promise<void>((resolve) => (finished = resolve));
  const worker = new Worker('noop', async () => undefined, { connection, prefix, concurrency });
  worker.on('completed', () => {
    if (++done === jobs) finished();
  });
  const started = performance.now();
  for (let i = 0; i < jobs; i += 500) {
    await queue.addBulk(
      Array.from({ length: Math.min(500, jobs - i) }, (_, k) => ({
        name: 'noop',
        data: { n: i + k },
        opts: { removeOnComplete: true },
      })),
    );
  }
  await all;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  return jobs / seconds;
}

/** The same client, adding the CPU time of each call to `add` (calls here run one at a time). */
function cpuMetered<T extends object>(target: T, add: (micros: number) => void): T {
  return new Proxy(target, {
    get(object, key, receiver) {
      const value = Reflect.get(object, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const before = process.cpuUsage();
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(object, args);
        } finally {
          const used = process.cpuUsage(before);
          add(used.user + used.system);
        }
      };
    },
  });
}

/**
 * Counts the round trips to Postgres of every pg client in this process until `stop()`: each
 * `query` call is one, a pipeline of several statements (db `executePipelined`) included.
 */
function countStatements(): { stop(): number; times: Map<string, { count: number; ms: number }> } {
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = prototype.query;
  let count = 0;
  // Each statement's time from sending it to its result, by the start of its text: where the
  // pipeline's Postgres time goes (pg_stat_statements is not loaded on a shared server).
  const times = new Map<string, { count: number; ms: number }>();
  prototype.query = function (this: unknown, ...args: unknown[]) {
    count += 1;
    const first = args[0] as string | { text?: string } | undefined;
    const text = (typeof first === 'string' ? first : (first?.text ?? '')).replace(/\s+/g, ' ').trim();
    const key = text.slice(0, 90);
    const started = performance.now();
    const done = () => {
      const entry = times.get(key) ?? { count: 0, ms: 0 };
      times.set(key, { count: entry.count + 1, ms: entry.ms + performance.now() - started });
    };
    // The pool passes a callback; a client's own query returns a promise.
    const last = args.at(-1);
    if (typeof last === 'function') {
      args[args.length - 1] = (...results: unknown[]) => {
        done();
        return (last as (...r: unknown[]) => unknown)(...results);
      };
    }
    const result = query.apply(this, args);
    if (result instanceof Promise) void result.then(done, () => undefined);
    return result;
  };
  return {
    times,
    stop: () => {
      prototype.query = query;
      return count;
    },
  };
}

/** The statements that took longest in all, per compaction. */
function printStatementTimes(times: Map<string, { count: number; ms: number }>, compactions: number): void {
  const sorted = [...times.entries()].sort((a, b) => b[1].ms - a[1].ms);
  const total = sorted.reduce((sum, [, t]) => sum + t.ms, 0);
  console.log(`  statements' wall time per compaction ${(total / compactions).toFixed(2)} ms; the longest:`);
  for (const [text, t] of sorted.slice(0, 12)) {
    console.log(
      `    ${(t.ms / compactions).toFixed(2).padStart(7)} ms ${(t.count / compactions).toFixed(1).padStart(4)}×  ${text}`,
    );
  }
}

/** Part 2's backlog (30 rounds of 64), and the count earlier runs used, reported beside it. */
const LLM_BOUND_COMPACTIONS = Number(process.env.BENCH_LLM_BOUND_COMPACTIONS ?? 1_920);
const FIRST_COMPACTIONS = 640;

const row = (label: string, value: string) => console.log(`${label.padEnd(62)} ${value}`);

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
const workerEnv = (prefix: string, concurrency: number) => {
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
};

try {
  // 1a. CPU per compaction, in this process (the stub and Postgres are other processes).
  const WINDOW = 300;
  const cpuSessions = await seedSessions(db, 30, WINDOW);
  // CPU spent inside the LLM client (prompt building, exact prompt counts, HTTP) is measured
  // apart: the pipeline's own overhead is the rest.
  let llmCpuMicros = 0;
  const llm = cpuMetered(
    createLlm({ apiKey: 'stub', baseURL: fastStub.url, timeoutMs: 30_000 }),
    (micros) => {
      llmCpuMicros += micros;
    },
  );
  const resources = {
    db,
    llm,
    clock: () => new Date(),
    log: silentLog,
  };
  const dispatch = (prefix: string) => {
    usedPrefixes.add(prefix);
    return {
      db,
      queues: createJobQueues({ connection, prefix }),
      events: noEvents,
      log: silentLog,
      clock: () => new Date(),
    };
  };
  const direct = dispatch(`{bench-direct-${Date.now()}}`);
  const ids: string[] = [];
  for (const session of cpuSessions)
    ids.push((await startCompaction(direct, session, { reason: 'manual' })).compaction.id);
  // Warm-up (JIT, tokenizer ranks, connections) on the first five, then measure the rest.
  for (const id of ids.slice(0, 5)) await runCompaction(resources, id, { lastAttempt: true });
  llmCpuMicros = 0;
  const statements = countStatements();
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  await profiled(async () => {
    for (const id of ids.slice(5)) {
      const outcome = await runCompaction(resources, id, { lastAttempt: true });
      if (outcome.status !== 'completed') throw new Error(`compaction ${id} ended ${outcome.status}`);
    }
  });
  const cpu = process.cpuUsage(cpuBefore);
  const statementCount = statements.stop();
  const measured = ids.length - 5;
  const sample = await findCompaction(db, ids[5]!);
  console.log(
    `\n1. pipeline overhead, zero-latency stub; window ${WINDOW} messages (${sample?.tokensBefore} tokens) → ${sample?.tokensAfter} tokens`,
  );
  row(
    'CPU per compaction (claim, prune, summarize, finalize; this process)',
    `${((cpu.user + cpu.system) / 1000 / measured).toFixed(2)} ms (user ${(cpu.user / 1000 / measured).toFixed(2)}, system ${(cpu.system / 1000 / measured).toFixed(2)})`,
  );
  row(
    '  of which in the LLM client (prompt, exact token count, HTTP)',
    `${(llmCpuMicros / 1000 / measured).toFixed(2)} ms`,
  );
  row(
    '  of which the pipeline (DB, steps, fencing, finalize)',
    `${((cpu.user + cpu.system - llmCpuMicros) / 1000 / measured).toFixed(2)} ms`,
  );
  row(
    'round trips to Postgres per compaction (BEGIN, COMMIT too)',
    `${(statementCount / measured).toFixed(1)}`,
  );
  printStatementTimes(statements.times, measured);
  row(
    'wall time per compaction, sequential',
    `${((performance.now() - wallBefore) / measured).toFixed(1)} ms`,
  );
  await direct.queues.close();

  if (PARTS.has('1b')) {
    // 1b. One worker process, concurrency 16, 150 compactions of 300-message windows.
    const throughputSessions = await seedSessions(db, 150, WINDOW);
    const prefix1 = `{bench-w1-${Date.now()}}`;
    const worker1 = await startWorkerProcess(workerEnv(prefix1, 16));
    const d1 = dispatch(prefix1);
    const ids1: string[] = [];
    const enqueueStarted = performance.now();
    for (const session of throughputSessions)
      ids1.push((await startCompaction(d1, session, { reason: 'manual' })).compaction.id);
    const ms1 = (await waitUntilFinished(db, ids1, 300_000)) + (performance.now() - enqueueStarted) * 0;
    const perSecond1 = ids1.length / ((performance.now() - enqueueStarted) / 1000);
    const peak1 = memoryOf(worker1.process.pid!);
    await worker1.stop();
    await d1.queues.close();
    const noop = await bullmqNoopThroughput(5_000, 16);
    row(
      'compactions/s, one worker process (concurrency 16)',
      `${perSecond1.toFixed(1)} /s  (${ids1.length} in ${(ms1 / 1000).toFixed(1)} s after the last enqueue)`,
    );
    row('BullMQ no-op jobs/s, same Redis, concurrency 16', `${noop.toFixed(0)} /s`);
    row('ratio: our job vs a no-op job', `${(noop / perSecond1).toFixed(1)}× the cost of BullMQ's own`);
    row('worker peak RSS during 1b', `${peak1.peakMiB.toFixed(0)} MiB`);
  }
  /**
   * The LLM-bound load: `sessions` small compactions (one LLM call each) enqueued as a backlog,
   * run by `processes` worker processes of `concurrency` each against a stub answering in
   * 500 ms. Compactions/s from the first start to the last finish.
   */
  const llmBound = async (
    slowStubUrl: Child & { url: string },
    processes: number,
    concurrency: number,
    count: number,
  ) => {
    const sessions = await seedSessions(db, count, 12);
    const prefix = `{bench-llm-${processes}x${concurrency}-${Date.now()}}`;
    // The whole backlog is queued before any worker starts: enqueueing 640 compactions from this
    // process while the worker ran took CPU from it on a two-CPU machine.
    const d = dispatch(prefix);
    const ids: string[] = [];
    for (const session of sessions)
      ids.push(
        (await startCompaction(d, session, { reason: 'manual', keepRecentTokens: 1_000 })).compaction.id,
      );
    const workers = await Promise.all(
      Array.from({ length: processes }, () =>
        startWorkerProcess({ ...workerEnv(prefix, concurrency), OPENAI_BASE_URL: slowStubUrl.url }),
      ),
    );
    // Each process's CPU from the workers' start (their boot excluded) to the last finish.
    const cpu = () => ({
      workers: workers.reduce((sum, w) => sum + cpuSecondsOf(w.process.pid!), 0),
      postgres: postgresCpuSeconds(),
      stub: cpuSecondsOf(slowStubUrl.process.pid!),
    });
    const cpuAtStart = cpu();
    await waitUntilFinished(db, ids, 600_000);
    const cpuAtEnd = cpu();
    // Steady state: the finishes between the first wave's and the last wave's (`slots` each),
    // leaving out the first jobs entering together and the last ones finishing alone.
    const slots = processes * concurrency;
    const span = await db.execute<{ seconds: number; steady: number | null; first: number | null }>(sql`
      with f as (
        select started_at, finished_at, row_number() over (order by finished_at) as n
        from compactions where id = any(${sql.param(ids)}::text[]))
      select extract(epoch from max(finished_at) - min(started_at))::float8 as seconds,
             extract(epoch from max(finished_at) filter (where n <= ${FIRST_COMPACTIONS}) - min(started_at))::float8
               as first,
             (count(*) filter (where n > ${slots} and n <= ${ids.length - slots}) - 1)
               / nullif(extract(epoch from max(finished_at) filter (where n <= ${ids.length - slots})
                                       - max(finished_at) filter (where n <= ${slots + 1})), 0)::float8 as steady
      from f`);
    await Promise.all(workers.map((w) => w.stop()));
    await d.queues.close();
    const seconds = span.rows[0]!.seconds;
    return {
      count: ids.length,
      seconds,
      perSecond: ids.length / seconds,
      steadyPerSecond: span.rows[0]!.steady,
      // The rate over the first 640 finishes only: what runs of 640 compactions measured.
      firstPerSecond: ids.length > FIRST_COMPACTIONS ? FIRST_COMPACTIONS / span.rows[0]!.first! : null,
      bound: (processes * concurrency) / 0.5,
      cpuMsPerCompaction: {
        workers: ((cpuAtEnd.workers - cpuAtStart.workers) * 1000) / ids.length,
        postgres: ((cpuAtEnd.postgres - cpuAtStart.postgres) * 1000) / ids.length,
        stub: ((cpuAtEnd.stub - cpuAtStart.stub) * 1000) / ids.length,
      },
    };
  };

  if (PARTS.has('2') || PARTS.has('4')) {
    const slowStub = await startStubProcess({ LLM_STUB_LATENCY_MS: '500' });
    if (PARTS.has('2')) {
      // 2. LLM-bound: 500 ms per call, concurrency 64 → at most 128 compactions/s. A backlog of
      // 30 rounds of 64: the first round enters a cold process one job at a time (its JIT, its
      // connections), which a run of 10 rounds weighed as a tenth of the run.
      const run = await llmBound(slowStub, 1, 64, LLM_BOUND_COMPACTIONS);
      console.log('\n2. LLM-bound: stub latency 500 ms, one worker process, WORKER_CONCURRENCY=64');
      row(
        'compactions/s (first start → last finish)',
        `${run.perSecond.toFixed(1)} /s  (${run.count} in ${run.seconds.toFixed(2)} s)`,
      );
      row('share of the 128/s bound (64 / 0.5 s)', `${((run.perSecond / run.bound) * 100).toFixed(1)} %`);
      if (run.firstPerSecond !== null)
        row(
          `… over the first ${FIRST_COMPACTIONS} finishes (cold start included)`,
          `${run.firstPerSecond.toFixed(1)} /s  (${((run.firstPerSecond / run.bound) * 100).toFixed(1)} % of the bound)`,
        );
      if (run.steadyPerSecond !== null)
        row(
          'steady state (first and last 64 finishes left out)',
          `${run.steadyPerSecond.toFixed(1)} /s  (${((run.steadyPerSecond / run.bound) * 100).toFixed(1)} % of the bound)`,
        );
      const { workers, postgres, stub } = run.cpuMsPerCompaction;
      row(
        'CPU per compaction: worker / Postgres / stub',
        `${workers.toFixed(1)} / ${postgres.toFixed(1)} / ${stub.toFixed(1)} ms (${os.availableParallelism()} CPUs)`,
      );
    }
    if (PARTS.has('4')) {
      // 4. Scale-out: the same load over several worker processes sharing the queue.
      console.log(
        `\n4. scale-out: stub latency 500 ms, WORKER_CONCURRENCY=32 per process, ${os.availableParallelism()} CPUs`,
      );
      let first = 0;
      for (const processes of [1, 2, 3]) {
        const run = await llmBound(slowStub, processes, 32, 320 * processes);
        first ||= run.perSecond;
        row(
          `${processes} worker process${processes > 1 ? 'es' : ''} (bound ${run.bound}/s)`,
          `${run.perSecond.toFixed(1)} /s  (${run.count} in ${run.seconds.toFixed(1)} s; ${(run.perSecond / first).toFixed(2)}× one process; ${((run.perSecond / run.bound) * 100).toFixed(0)} % of the bound)`,
        );
      }
    }
    await slowStub.stop();
  }

  // 3. Peak RSS compacting a 100,000-message session: the worker as it starts by default, then
  // with its V8 heap capped (the bound an operator sets; too small a cap ends in an out-of-memory
  // crash, which this part reports instead of a figure).
  if (PARTS.has('3') && RSS_MESSAGES > 0) {
    console.log(`\n3. one session of ${RSS_MESSAGES} messages, never compacted`);
    for (const heapMiB of [0, ...(RSS_HEAP_MIB > 0 ? [RSS_HEAP_MIB] : [])]) {
      const seeded = performance.now();
      const [big] = await seedSessions(db, 1, RSS_MESSAGES);
      const label = heapMiB > 0 ? `--max-old-space-size=${heapMiB}` : 'default heap';
      console.log(
        `  worker with ${label} (session seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s)`,
      );
      const prefix3 = `{bench-w3-${Date.now()}}`;
      const heap: Record<string, string> =
        heapMiB > 0 ? { NODE_OPTIONS: `--max-old-space-size=${heapMiB}` } : {};
      const worker3 = await startWorkerProcess({ ...workerEnv(prefix3, 4), ...heap });
      const idle = memoryOf(worker3.process.pid!);
      const d3 = dispatch(prefix3);
      const { compaction } = await startCompaction(d3, big!, { reason: 'manual' });
      let peak = idle.peakMiB;
      const started = performance.now();
      for (;;) {
        if (worker3.process.exitCode !== null || worker3.process.signalCode !== null) {
          row(
            '  worker',
            `exited (${worker3.process.signalCode ?? worker3.process.exitCode}) after ${((performance.now() - started) / 1000).toFixed(1)} s: out of memory at this cap`,
          );
          break;
        }
        peak = Math.max(peak, memoryOf(worker3.process.pid!).peakMiB);
        const current = await findCompaction(db, compaction.id);
        if (current && !['pending', 'running'].includes(current.status)) {
          row('  worker RSS idle → peak (VmHWM)', `${idle.rssMiB.toFixed(0)} → ${peak.toFixed(0)} MiB`);
          row(
            '  compaction',
            `${current.status} in ${((performance.now() - started) / 1000).toFixed(1)} s; ${current.tokensBefore} → ${current.tokensAfter} tokens, ${(current.details as { calls?: number }).calls ?? '?'} LLM calls`,
          );
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await worker3.stop();
      await d3.queues.close();
    }
  }
} finally {
  await fastStub.stop();
  await database.close();
  for (const prefix of usedPrefixes) {
    // A cleanup failure (Redis gone) must not hide the benchmark's own error.
    await deleteQueueKeys(REDIS_URL, prefix).catch((error: Error) =>
      console.error(`could not delete the keys of ${prefix}: ${error.message}`),
    );
  }
}
