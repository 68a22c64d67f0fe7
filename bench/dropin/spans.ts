/**
 * Where a drop-in request's time goes, measured inside the API process without touching its
 * code: preloaded there by the drop-in benchmark (`--import`) when BENCH_DROPIN_SPANS names a
 * file. It times every Postgres statement (by kind), every upstream HTTP call (undici's
 * diagnostics channels: the SDK's fetch), and every request the server answers; on SIGUSR2 it
 * writes the sums since the previous SIGUSR2 to that file (then renamed into place) and starts
 * again. What the three leave is the process's own work (parsing, hashing, rendering, waiting).
 * With BENCH_DROPIN_CPU_PROFILE_DIR, each period between two SIGUSR2s is also a V8 CPU profile
 * there, its path in the sums (`profile`), so a profile covers the measured turns alone.
 */
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import pg from 'pg';

interface Sum {
  count: number;
  ms: number;
}

const file = process.env.BENCH_DROPIN_SPANS;
const profileDir = process.env.BENCH_DROPIN_CPU_PROFILE_DIR;
/** BENCH_DROPIN_STATEMENT_LOG: a file that gets every statement, in order (start, ms, text). */
const statementLog = process.env.BENCH_DROPIN_STATEMENT_LOG || null;
let statements = new Map<string, Sum>();
let upstream: Sum = { count: 0, ms: 0 };
let served: Sum = { count: 0, ms: 0 };

const add = (sum: Sum, ms: number) => {
  sum.count += 1;
  sum.ms += ms;
};

/** A statement's kind: its verb and the table it names first (parameters and literals left out). */
function kindOf(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim().toLowerCase();
  const verb = /^(\w+)/.exec(flat)?.[1] ?? '?';
  const table = /\b(?:from|into|update|join)\s+"?(\w+)"?/.exec(flat)?.[1] ?? '';
  return `${verb} ${table}`.trim();
}

if (file) {
  type Query = (this: pg.Client, ...args: unknown[]) => unknown;
  const original = pg.Client.prototype.query as unknown as Query;
  (pg.Client.prototype as unknown as { query: Query }).query = function timedQuery(...args) {
    const first = args[0];
    const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
    const kind =
      text === '' && typeof (first as { submit?: unknown } | null)?.submit === 'function'
        ? 'pipeline'
        : kindOf(text);
    const started = performance.now();
    const done = () => {
      if (statementLog)
        appendFileSync(
          statementLog,
          `${started.toFixed(1)}\t${(performance.now() - started).toFixed(2)}\t${text.replace(/\s+/g, ' ').slice(0, 240)}\n`,
        );
      const sum = statements.get(kind) ?? { count: 0, ms: 0 };
      add(sum, performance.now() - started);
      statements.set(kind, sum);
    };
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (...results: unknown[]) => {
        done();
        return (callback as (...a: unknown[]) => unknown)(...results);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (result instanceof Promise) return result.finally(done);
    // A submittable (db's pipeline: several statements, one round trip) says when it is done.
    const submitted = (first as { done?: unknown } | null)?.done;
    if (submitted instanceof Promise) submitted.then(done, done);
    return result;
  };

  const upstreamStarts = new WeakMap<object, number>();
  subscribe('undici:request:create', (message) => {
    upstreamStarts.set((message as { request: object }).request, performance.now());
  });
  subscribe('undici:request:trailers', (message) => {
    const started = upstreamStarts.get((message as { request: object }).request);
    if (started !== undefined) add(upstream, performance.now() - started);
  });

  const requestStarts = new WeakMap<object, number>();
  subscribe('http.server.request.start', (message) => {
    requestStarts.set((message as { response: object }).response, performance.now());
    if (statementLog) appendFileSync(statementLog, `${performance.now().toFixed(1)}\t-\trequest start\n`);
  });
  subscribe('http.server.response.finish', (message) => {
    const started = requestStarts.get((message as { response: object }).response);
    if (started !== undefined) add(served, performance.now() - started);
    if (statementLog) appendFileSync(statementLog, `${performance.now().toFixed(1)}\t-\trequest finish\n`);
  });

  let profiles = 0;
  const profiler = profileDir ? new Session() : null;
  profiler?.connect();
  const startProfile = async () => {
    await profiler?.post('Profiler.enable');
    await profiler?.post('Profiler.start');
  };
  /** Ends the period's profile (if any) and starts the next one; the ended one's path. */
  const nextProfile = async (): Promise<string | null> => {
    if (!profiler || !profileDir) return null;
    const { profile } = await profiler.post('Profiler.stop');
    const path = join(profileDir, `dropin-api-${process.pid}-${++profiles}.cpuprofile`);
    writeFileSync(path, JSON.stringify(profile));
    await startProfile();
    return path;
  };
  void startProfile();

  process.on('SIGUSR2', () => {
    const sums = { served, upstream, statements: Object.fromEntries(statements) };
    statements = new Map();
    upstream = { count: 0, ms: 0 };
    served = { count: 0, ms: 0 };
    void nextProfile().then((profile) => {
      writeFileSync(`${file}.partial`, JSON.stringify({ ...sums, profile }));
      renameSync(`${file}.partial`, file);
    });
  });
}
