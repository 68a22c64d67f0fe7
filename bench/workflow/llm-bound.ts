/**
 * Parts 2 and 4: the LLM-bound load (a stub answering in 500 ms) through one worker process of
 * concurrency 64 against the 128/s bound, and spread over 1, 2 and 3 processes.
 */
import os from 'node:os';
import { sql } from 'drizzle-orm';
import type { Db } from '@compactor/db';
import { startCompaction, type DispatchDeps, type JobQueues } from '@compactor/queue';
import {
  cpuSecondsOf,
  postgresCpuSeconds,
  startStubProcess,
  startWorkerProcess,
  type Child,
} from '../processes';
import { row, seedSessions, waitUntilFinished } from './sessions';

/** How the parts start worker processes and request compactions on a queue prefix. */
export interface Dispatcher {
  workerEnv(prefix: string, concurrency: number): Record<string, string>;
  dispatch(prefix: string): DispatchDeps & { queues: JobQueues };
}

/** Part 2's backlog (30 rounds of 64), and the count earlier runs used, reported beside it. */
const LLM_BOUND_COMPACTIONS = Number(process.env.BENCH_LLM_BOUND_COMPACTIONS ?? 1_920);
const FIRST_COMPACTIONS = 640;

/**
 * `count` small compactions (one LLM call each) enqueued as a backlog, run by `processes` worker
 * processes of `concurrency` each against a stub answering in 500 ms. Compactions/s from the
 * first start to the last finish.
 */
async function llmBound(
  db: Db,
  dispatcher: Dispatcher,
  slowStub: Child & { url: string },
  processes: number,
  concurrency: number,
  count: number,
) {
  const sessions = await seedSessions(db, count, 12);
  const prefix = `{bench-llm-${processes}x${concurrency}-${Date.now()}}`;
  // The whole backlog is queued before any worker starts: enqueueing 640 compactions from this
  // process while the worker ran took CPU from it on a two-CPU machine.
  const d = dispatcher.dispatch(prefix);
  const ids: string[] = [];
  for (const session of sessions)
    ids.push(
      (await startCompaction(d, session, { reason: 'manual', keepRecentTokens: 1_000 })).compaction.id,
    );
  const workers = await Promise.all(
    Array.from({ length: processes }, () =>
      startWorkerProcess({ ...dispatcher.workerEnv(prefix, concurrency), OPENAI_BASE_URL: slowStub.url }),
    ),
  );
  // Each process's CPU from the workers' start (their boot excluded) to the last finish.
  const cpu = () => ({
    workers: workers.reduce((sum, w) => sum + cpuSecondsOf(w.process.pid!), 0),
    postgres: postgresCpuSeconds(),
    stub: cpuSecondsOf(slowStub.process.pid!),
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
}

export async function llmBoundParts(db: Db, dispatcher: Dispatcher, parts: Set<string>): Promise<void> {
  const slowStub = await startStubProcess({ LLM_STUB_LATENCY_MS: '500' });
  try {
    if (parts.has('2')) {
      // 2. LLM-bound: 500 ms per call, concurrency 64 → at most 128 compactions/s. A backlog of
      // 30 rounds of 64: the first round enters a cold process one job at a time (its JIT, its
      // connections), which a run of 10 rounds weighed as a tenth of the run.
      const run = await llmBound(db, dispatcher, slowStub, 1, 64, LLM_BOUND_COMPACTIONS);
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
    if (parts.has('4')) {
      // 4. Scale-out: the same load over several worker processes sharing the queue.
      console.log(
        `\n4. scale-out: stub latency 500 ms, WORKER_CONCURRENCY=32 per process, ${os.availableParallelism()} CPUs`,
      );
      let first = 0;
      for (const processes of [1, 2, 3]) {
        const run = await llmBound(db, dispatcher, slowStub, processes, 32, 320 * processes);
        first ||= run.perSecond;
        row(
          `${processes} worker process${processes > 1 ? 'es' : ''} (bound ${run.bound}/s)`,
          `${run.perSecond.toFixed(1)} /s  (${run.count} in ${run.seconds.toFixed(1)} s; ${(run.perSecond / first).toFixed(2)}× one process; ${((run.perSecond / run.bound) * 100).toFixed(0)} % of the bound)`,
        );
      }
    }
  } finally {
    await slowStub.stop();
  }
}
