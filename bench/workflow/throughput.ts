/**
 * Part 1b: compactions/s of one worker process (concurrency 16) against the zero-latency stub,
 * beside BullMQ's own no-op job throughput on the same Redis in the same run.
 */
import { Queue, Worker } from 'bullmq';
import type { Db } from '@compactor/db';
import { startCompaction } from '@compactor/queue';
import { memoryOf, startWorkerProcess } from '../processes';
import { CPU_WINDOW } from './compaction-cpu';
import type { Dispatcher } from './llm-bound';
import { row, seedSessions, waitUntilFinished } from './sessions';

/** BullMQ alone: no-op jobs through one in-process worker, the queue's own ceiling on this machine. */
async function bullmqNoopThroughput(redisUrl: string, jobs: number, concurrency: number): Promise<number> {
  const connection = { url: redisUrl, maxRetriesPerRequest: null };
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

export async function throughputPart(db: Db, redisUrl: string, dispatcher: Dispatcher): Promise<void> {
  const sessions = await seedSessions(db, 150, CPU_WINDOW);
  const prefix = `{bench-w1-${Date.now()}}`;
  const worker = await startWorkerProcess(dispatcher.workerEnv(prefix, 16));
  const d = dispatcher.dispatch(prefix);
  const ids: string[] = [];
  const enqueueStarted = performance.now();
  for (const session of sessions)
    ids.push((await startCompaction(d, session, { reason: 'manual' })).compaction.id);
  const ms = await waitUntilFinished(db, ids, 300_000);
  const perSecond = ids.length / ((performance.now() - enqueueStarted) / 1000);
  const peak = memoryOf(worker.process.pid!);
  await worker.stop();
  await d.queues.close();
  const noop = await bullmqNoopThroughput(redisUrl, 5_000, 16);
  console.log('\n1b. one worker process, zero-latency stub');
  row(
    'compactions/s, one worker process (concurrency 16)',
    `${perSecond.toFixed(1)} /s  (${ids.length} in ${(ms / 1000).toFixed(1)} s after the last enqueue)`,
  );
  row('BullMQ no-op jobs/s, same Redis, concurrency 16', `${noop.toFixed(0)} /s`);
  row('ratio: our job vs a no-op job', `${(noop / perSecond).toFixed(1)}× the cost of BullMQ's own`);
  row('worker peak RSS during 1b', `${peak.peakMiB.toFixed(0)} MiB`);
}
