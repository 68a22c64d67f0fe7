/**
 * The child side of bench/compaction-memory.bench.ts: runs one compaction in this process and
 * measures it — wall time, peak RSS, the longest event-loop stall, the longest gap of a 10 ms
 * interval (what a probe or a lock renewal scheduled on a timer would have waited).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What one compaction cost its process. */
export interface ChildFigures {
  status: string;
  wallMs: number;
  maxRssMiB: number;
  maxDelayMs: number;
  maxGapMs: number;
  /** Peaks of `process.memoryUsage()` sampled by the ticker, in MiB. */
  peakHeapUsedMiB: number;
  peakHeapTotalMiB: number;
  peakExternalMiB: number;
}

interface Run {
  run(): Promise<{ status: string }>;
  close(): Promise<void>;
}

/** Sets up (`prepare`), then measures the compaction alone. */
export async function measureChild(prepare: () => Promise<Run>): Promise<ChildFigures> {
  const { run, close } = await prepare();
  const delay = monitorEventLoopDelay({ resolution: 10 });
  let last = performance.now();
  let maxGapMs = 0;
  const peak = { heapUsed: 0, heapTotal: 0, external: 0 };
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    const memory = process.memoryUsage();
    peak.heapUsed = Math.max(peak.heapUsed, memory.heapUsed);
    peak.heapTotal = Math.max(peak.heapTotal, memory.heapTotal);
    peak.external = Math.max(peak.external, memory.external);
  }, 10);
  delay.enable();
  const started = performance.now();
  const outcome = await run();
  const wallMs = performance.now() - started;
  delay.disable();
  clearInterval(ticker);
  await close();
  return {
    status: outcome.status,
    wallMs,
    // maxRSS is in KiB.
    maxRssMiB: process.resourceUsage().maxRSS / 1024,
    maxDelayMs: delay.max / 1e6,
    maxGapMs,
    peakHeapUsedMiB: peak.heapUsed / 2 ** 20,
    peakHeapTotalMiB: peak.heapTotal / 2 ** 20,
    peakExternalMiB: peak.external / 2 ** 20,
  };
}
