/**
 * Part 3: peak RSS of a worker process compacting a never-compacted session of
 * `BENCH_RSS_MESSAGES` messages: as it starts by default, then with its V8 heap capped (the bound
 * an operator sets; too small a cap ends in an out-of-memory crash, which is reported instead of
 * a figure).
 */
import { findCompaction, type Db } from '@compactor/db';
import { startCompaction } from '@compactor/queue';
import { memoryOf, startWorkerProcess } from '../processes';
import type { Dispatcher } from './llm-bound';
import { row, seedSessions } from './sessions';

export async function workerRssPart(
  db: Db,
  dispatcher: Dispatcher,
  messages: number,
  heapCapsMiB: number[],
): Promise<void> {
  console.log(`\n3. one session of ${messages} messages, never compacted`);
  for (const heapMiB of [0, ...heapCapsMiB]) {
    const seeded = performance.now();
    const [big] = await seedSessions(db, 1, messages);
    const label = heapMiB > 0 ? `--max-old-space-size=${heapMiB}` : 'default heap';
    console.log(
      `  worker with ${label} (session seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s)`,
    );
    const prefix = `{bench-w3-${Date.now()}}`;
    const heap: Record<string, string> =
      heapMiB > 0 ? { NODE_OPTIONS: `--max-old-space-size=${heapMiB}` } : {};
    const worker = await startWorkerProcess({ ...dispatcher.workerEnv(prefix, 4), ...heap });
    const idle = memoryOf(worker.process.pid!);
    const d = dispatcher.dispatch(prefix);
    const { compaction } = await startCompaction(d, big!, { reason: 'manual' });
    let peak = idle.peakMiB;
    const started = performance.now();
    for (;;) {
      if (worker.process.exitCode !== null || worker.process.signalCode !== null) {
        row(
          '  worker',
          `exited (${worker.process.signalCode ?? worker.process.exitCode}) after ${((performance.now() - started) / 1000).toFixed(1)} s: out of memory at this cap`,
        );
        break;
      }
      peak = Math.max(peak, memoryOf(worker.process.pid!).peakMiB);
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
    await worker.stop();
    await d.queues.close();
  }
}
