/**
 * What the core benchmarks share: deterministic pseudo-random numbers, messages shaped like the
 * store's rows, and timing a piece of work (median and p95 after a JIT warm-up), printed one
 * aligned row per measurement.
 */
import { availableParallelism, loadavg } from 'node:os';
import type { Message, Part } from '@compactor/core';

/** Deterministic pseudo-random numbers in [0, 1) (a benchmark must measure the same thing each run). */
export function lcg(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

/**
 * A message as the store's row mapper builds it: one object literal, fields in a fixed order.
 * (Objects built by spreading a shared base, like `@compactor/core/testing`'s, are slower to walk
 * in V8 and would slow what is measured.)
 */
export function storedMessage(seq: number, role: Message['role'], parts: Part[]): Message {
  return {
    id: `m${seq}`,
    seq,
    role,
    parts,
    finish: role === 'assistant' ? 'tool-calls' : null,
    error: null,
    usage: null,
    createdAt: '2025-01-01T00:00:00Z',
    metadata: {},
    summary: false,
    compactionId: null,
  };
}

/** Milliseconds per run of one measurement. */
export interface Timing {
  median: number;
  p95: number;
  runs: number;
}

/** Times `runs` calls of `work`, after up to 3 unmeasured calls to warm up the JIT. */
export function measure(runs: number, work: () => unknown): Timing {
  for (let i = 0; i < Math.min(3, runs); i++) work();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    work();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number): number => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return { median: at(0.5), p95: at(0.95), runs };
}

/** `name   median … ms   p95 … ms   (n runs)`, the times right-aligned in `width` characters. */
export function timingRow(name: string, timing: Timing, width: number): string {
  const ms = (value: number): string => value.toFixed(2).padStart(width);
  return `${name.padEnd(48)} median ${ms(timing.median)} ms   p95 ${ms(timing.p95)} ms   (${timing.runs} runs)`;
}

/**
 * Runs `work` under the V8 CPU profiler when `BENCH_CPU_PROFILE` names a file (open it in Chrome
 * DevTools or speedscope), so a profile shows only the measured part, not the seeding before it.
 */
export async function profiled<T>(work: () => Promise<T>): Promise<T> {
  const file = process.env.BENCH_CPU_PROFILE;
  if (!file) return work();
  const { Session } = await import('node:inspector/promises');
  const { writeFile } = await import('node:fs/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(file, JSON.stringify(profile));
    session.disconnect();
    console.log(`CPU profile of the measured part: ${file}`);
  }
}

/** The headers of a benchmark's API call as the tenant whose bearer key is `key`. */
export const apiHeaders = (key: string) => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
});

/** Latencies (ms) summarised: how many, the median, the 95th and 99th percentiles, the worst. */
export interface Spread {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** {@link Spread} of `times` (any order): the sample at ⌊q × n⌋ of the sorted times. */
export function spread(times: readonly number[]): Spread {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { n: sorted.length, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: sorted.at(-1)! };
}

/** The machine's load averages (1, 5, 15 minutes) and its cores: printed beside every figure. */
export function loadNote(): string {
  const [one, five, fifteen] = loadavg().map((value) => value.toFixed(1));
  return `load average ${one} / ${five} / ${fifteen} (1/5/15 min, ${availableParallelism()} cores)`;
}

/**
 * `ms` scaled by how loaded the machine is (its 1-minute load average per core, at least 1×): a
 * wait that holds on a quiet machine, made long enough for a shared one.
 */
export function loadScaled(ms: number): number {
  return Math.round(ms * Math.max(1, loadavg()[0]! / availableParallelism()));
}

/**
 * The API process's event-loop delay since the previous call, from its /metrics (prom-client
 * resets the histogram at each scrape): max and p99 in ms.
 */
export async function apiLoopDelay(api: string): Promise<{ max: number; p99: number }> {
  const text = await (await fetch(`${api}/metrics`)).text();
  const value = (name: string) =>
    Number(
      new RegExp(`^compactor_api_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1] ?? NaN,
    ) * 1000;
  return { max: value('max'), p99: value('p99') };
}
