/**
 * Where a compaction's Postgres time goes: its round trips counted and timed by statement in
 * this process, and the CPU its own server backends used (pg_stat_statements needs
 * `shared_preload_libraries`, which the shared server does not load, so the backends' CPU is
 * read from /proc: Postgres runs on this machine).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { sql } from 'drizzle-orm';
import type { Db } from '@compactor/db';
import { cpuSecondsOf } from '../processes';

/**
 * Round trips and time from send to result, by the start of each statement's text; with
 * `BENCH_STATEMENT_CPU=1`, `cpuMs`: the CPU its server backend used meanwhile.
 */
export type StatementTimes = Map<string, { count: number; ms: number; bytes: number; cpuMs?: number }>;

/**
 * CPU time so far of process `pid`, in ms, from `/proc/<pid>/schedstat` (nanoseconds, where
 * `/proc/<pid>/stat` counts 10 ms ticks); null when the backend is not on this machine.
 */
function backendCpuMs(pid: number | null | undefined): number | null {
  if (!pid) return null;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return null;
  }
}

/** About how many bytes a statement sends: its text and its parameters as text. */
function sentBytes(
  first: string | { text?: string; values?: unknown[] } | undefined,
  values: unknown,
): number {
  const text = typeof first === 'string' ? first : (first?.text ?? '');
  const params = (typeof first === 'object' && first.values) || (Array.isArray(values) ? values : []);
  let bytes = text.length;
  for (const value of params as unknown[]) {
    if (typeof value === 'string') bytes += value.length;
    else if (Buffer.isBuffer(value)) bytes += value.length;
    else if (value !== null && value !== undefined) bytes += JSON.stringify(value)?.length ?? 0;
  }
  return bytes;
}

/**
 * Counts the round trips to Postgres of every pg client in this process until `stop()`: each
 * `query` call is one, a pipeline of several statements (db `executePipelined`) included.
 */
export function countStatements(): { stop(): number; times: StatementTimes } {
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = prototype.query;
  let count = 0;
  const times: StatementTimes = new Map();
  // A backend serves one connection, one statement at a time: its CPU from send to result is
  // that statement's. Off by default: two reads of /proc a statement are CPU of this process too.
  const backendCpu = process.env.BENCH_STATEMENT_CPU === '1';
  prototype.query = function (this: { processID?: number | null }, ...args: unknown[]) {
    count += 1;
    const first = args[0] as string | { text?: string; values?: unknown[] } | undefined;
    const text = (typeof first === 'string' ? first : (first?.text ?? '')).replace(/\s+/g, ' ').trim();
    const key = text.slice(0, 110);
    const bytes = sentBytes(first, args[1]);
    const pid = this.processID;
    const cpuBefore = backendCpu ? backendCpuMs(pid) : null;
    const started = performance.now();
    const done = () => {
      const entry = times.get(key) ?? { count: 0, ms: 0, bytes: 0 };
      const cpuAfter = cpuBefore === null ? null : backendCpuMs(pid);
      times.set(key, {
        count: entry.count + 1,
        ms: entry.ms + performance.now() - started,
        bytes: entry.bytes + bytes,
        ...(cpuAfter === null ? {} : { cpuMs: (entry.cpuMs ?? 0) + cpuAfter - cpuBefore! }),
      });
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

/** Every statement, longest in all first, per compaction. */
export function printStatementTimes(times: StatementTimes, compactions: number, limit = 30): void {
  const sorted = [...times.entries()].sort((a, b) => b[1].ms - a[1].ms);
  const total = sorted.reduce((sum, [, t]) => sum + t.ms, 0);
  const withCpu = sorted.some(([, t]) => t.cpuMs !== undefined);
  const cpuTotal = sorted.reduce((sum, [, t]) => sum + (t.cpuMs ?? 0), 0);
  console.log(
    `  statements' wall time per compaction ${(total / compactions).toFixed(2)} ms` +
      (withCpu ? `, their backends' CPU ${(cpuTotal / compactions).toFixed(2)} ms` : '') +
      ` (time,${withCpu ? ' backend CPU,' : ''} count, about the KiB sent):`,
  );
  for (const [text, t] of sorted.slice(0, limit)) {
    const cpu = withCpu ? ` ${((t.cpuMs ?? 0) / compactions).toFixed(2).padStart(7)} ms` : '';
    console.log(
      `    ${(t.ms / compactions).toFixed(2).padStart(7)} ms${cpu} ${(t.count / compactions).toFixed(1).padStart(4)}× ${(t.bytes / compactions / 1024).toFixed(0).padStart(5)} KiB  ${text}`,
    );
  }
}

/**
 * The CPU seconds so far of the server backends serving connections named `applicationName`,
 * by backend pid (a backend that has ended is missing: the pool keeps its idle connections
 * longer than a measured run lasts).
 */
export async function backendCpuSeconds(db: Db, applicationName: string): Promise<Map<number, number>> {
  const { rows } = await db.execute<{ pid: number }>(
    sql`select pid from pg_stat_activity where application_name = ${applicationName}`,
  );
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      cpu.set(pid, cpuSecondsOf(pid));
    } catch {
      // Not on this machine (a remote server) or ended meanwhile: not counted.
    }
  }
  return cpu;
}

/** CPU seconds the backends used between two {@link backendCpuSeconds} readings. */
export function backendCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let seconds = 0;
  for (const [pid, value] of after) seconds += value - (before.get(pid) ?? 0);
  return seconds;
}
