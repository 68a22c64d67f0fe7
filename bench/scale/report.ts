/**
 * Timing, memory and goal bookkeeping for the scale benchmark: async calls timed like
 * harness.ts's `measure`, peak RSS of this process around one call, and PASS/FAIL per goal with a
 * non-zero exit at the end when any failed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Timing } from '../harness';

/**
 * Times `runs` rounds of awaited calls, one call of each of `works` per round, after `warmup`
 * unmeasured rounds (JIT, statement plans, caches). Interleaving the works makes them share
 * whatever the machine does meanwhile (autovacuum, checkpoints), so ratios between them are fair.
 */
export async function measureInterleaved(
  runs: number,
  works: Array<() => Promise<unknown>>,
  warmup = Math.min(3, runs),
): Promise<Timing[]> {
  for (let i = 0; i < warmup; i++) for (const work of works) await work();
  const times = works.map((): number[] => []);
  for (let run = 0; run < runs; run++) {
    for (const [i, work] of works.entries()) {
      const started = performance.now();
      await work();
      times[i]!.push(performance.now() - started);
    }
  }
  return times.map((samples) => {
    samples.sort((a, b) => a - b);
    const at = (q: number): number => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
    return { median: at(0.5), p95: at(0.95), runs };
  });
}

/** Times `runs` awaited calls of `work`, after `warmup` unmeasured ones. */
export async function measureAsync(
  runs: number,
  work: () => Promise<unknown>,
  warmup = Math.min(3, runs),
): Promise<Timing> {
  const [timing] = await measureInterleaved(runs, [work], warmup);
  return timing!;
}

/**
 * The quietest of `blocks` measurements (lowest median): for a before/after comparison taken
 * minutes apart, where a burst of unrelated work on the machine would decide the ratio.
 */
export async function quietest(blocks: number, measure: () => Promise<Timing>): Promise<Timing> {
  let best: Timing | undefined;
  for (let i = 0; i < blocks; i++) {
    const timing = await measure();
    if (!best || timing.median < best.median) best = timing;
  }
  return best!;
}

/** This process's resident memory now and its peak since the last reset, in MiB (Linux /proc). */
function rss(): { now: number; peak: number } {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/**
 * Runs `work` and returns its result with how far resident memory rose above where it started.
 * The kernel's peak (VmHWM, reset through /proc/self/clear_refs) sees growth even while `work`
 * blocks the event loop; a 5 ms sampler is the fallback where the reset is not allowed.
 */
export async function withPeakRss<T>(work: () => Promise<T>): Promise<{ result: T; growthMiB: number }> {
  let resettable = true;
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    resettable = false;
  }
  const before = rss().now;
  let sampled = before;
  const sampler = resettable ? null : setInterval(() => (sampled = Math.max(sampled, rss().now)), 5);
  try {
    const result = await work();
    const peak = resettable ? rss().peak : Math.max(sampled, rss().now);
    return { result, growthMiB: Math.max(0, peak - before) };
  } finally {
    if (sampler) clearInterval(sampler);
  }
}

export const ms = (value: number): string => `${value.toFixed(2)} ms`;
export const mib = (value: number): string => `${value.toFixed(1)} MiB`;

/** `a / b` to one decimal, `—` when either side is missing. */
export function ratio(a: number | undefined, b: number | undefined): string {
  return a === undefined || b === undefined || b === 0 ? '—' : `${(a / b).toFixed(1)}×`;
}

/** Goals with their verdicts; a failed goal (or a step that threw) makes the process exit non-zero. */
export class Goals {
  private readonly failures: string[] = [];
  private readonly lines: string[] = [];

  /** Records a goal; `value` undefined means it could not be measured (its step failed). */
  check(name: string, value: number | undefined, pass: (value: number) => boolean, shown: string): void {
    const ok = value !== undefined && pass(value);
    this.verdict(ok, name, value === undefined ? 'not measured' : shown);
  }

  /**
   * Runs a step; if it throws, prints the error as a failed check and returns undefined. With
   * `shown`, the step is a check of its own and its success is printed as a pass.
   */
  async step<T>(name: string, work: () => Promise<T>, shown?: (result: T) => string): Promise<T | undefined> {
    let result: T;
    try {
      result = await work();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.verdict(false, name, `error: ${message.split('\n')[0]!.slice(0, 300)}`);
      return undefined;
    }
    if (shown) this.verdict(true, name, shown(result));
    return result;
  }

  private verdict(ok: boolean, name: string, detail: string): void {
    const line = `${ok ? 'PASS' : 'FAIL'}  ${name.padEnd(66)} ${detail}`;
    this.lines.push(line);
    console.log(line);
    if (!ok) this.failures.push(name);
  }

  /** Prints every verdict again, together, and sets a non-zero exit code if any failed. */
  summarize(): void {
    console.log(
      `\ngoals: ${this.lines.length - this.failures.length} passed, ${this.failures.length} failed`,
    );
    for (const line of this.lines) console.log(`  ${line}`);
    if (this.failures.length > 0) process.exitCode = 1;
  }
}
