/**
 * The benchmark's side of bench/dropin/spans.ts: the environment that preloads it into the API
 * (BENCH_DROPIN_SPANS=1), and where a measured phase's time went in the API, per request.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuSecondsOf } from '../processes';

interface Sum {
  count: number;
  ms: number;
}

interface SpanSums {
  served: Sum;
  upstream: Sum;
  statements: Record<string, Sum>;
  /** The API's CPU profile of the period (BENCH_DROPIN_CPU_PROFILE_DIR). */
  profile: string | null;
}

/** Where the API writes its sums, when BENCH_DROPIN_SPANS=1 asks for them. */
export const spansFile =
  process.env.BENCH_DROPIN_SPANS === '1' ? join(tmpdir(), `dropin-spans-${process.pid}.json`) : null;

/** The API's extra environment: the preload and its settings (none without spans). */
export function spansEnv(): Record<string, string> {
  if (!spansFile) return {};
  return {
    NODE_OPTIONS: `--import tsx --import ${join(import.meta.dirname, 'spans.ts')}`,
    BENCH_DROPIN_SPANS: spansFile,
    BENCH_DROPIN_CPU_PROFILE_DIR: process.env.BENCH_DROPIN_CPU_PROFILE_DIR ?? '',
    BENCH_DROPIN_STATEMENT_LOG: process.env.BENCH_DROPIN_STATEMENT_LOG ?? '',
  };
}

/** The API's sums since the previous call (null without spans). */
async function apiSpans(api: ChildProcess): Promise<SpanSums | null> {
  if (!spansFile) return null;
  rmSync(spansFile, { force: true });
  api.kill('SIGUSR2');
  const deadline = Date.now() + 10_000;
  while (!existsSync(spansFile)) {
    if (Date.now() > deadline) throw new Error('the API wrote no spans');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return JSON.parse(readFileSync(spansFile, 'utf8')) as SpanSums;
}

/** Runs `work`; then `lines` say where the API's time went per request (with spans). */
export async function brokenDown<T>(
  api: ChildProcess,
  work: () => Promise<T>,
): Promise<{ result: T; lines: string[] }> {
  await apiSpans(api);
  const cpuBefore = cpuSecondsOf(api.pid!);
  const result = await work();
  const cpuSeconds = cpuSecondsOf(api.pid!) - cpuBefore;
  const sums = await apiSpans(api);
  if (!sums) return { result, lines: [] };
  const n = Math.max(1, sums.served.count);
  const per = (ms: number) => `${(ms / n).toFixed(1)} ms`;
  const db = Object.values(sums.statements).reduce(
    (a, b) => ({ count: a.count + b.count, ms: a.ms + b.ms }),
    { count: 0, ms: 0 },
  );
  const lines = [
    `  API, per drop-in request (${n}): answered in ${per(sums.served.ms)}: upstream ${per(sums.upstream.ms)}, ` +
      `Postgres ${per(db.ms)} (${(db.count / n).toFixed(1)} statements), the rest ${per(sums.served.ms - sums.upstream.ms - db.ms)}; ` +
      `API CPU ${per(cpuSeconds * 1000)}`,
  ];
  const top = Object.entries(sums.statements)
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(([kind, sum]) => `${kind} ${(sum.count / n).toFixed(1)}× ${per(sum.ms)}`);
  lines.push(`  statements by time: ${top.join('; ')}`);
  if (sums.profile) lines.push(`  the API's CPU profile of these turns: ${sums.profile}`);
  return { result, lines };
}
