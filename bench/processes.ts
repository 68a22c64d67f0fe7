/**
 * Benchmarks that measure the real system run its processes: the LLM stub and worker
 * processes, each in its own Node process so its CPU and memory are its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadNote, loadScaled } from './harness';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createScratchDatabase, dropScratchDatabase, migrateDatabase } from '@compactor/db';

export { loadNote };

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface Child {
  process: ChildProcess;
  /** What it printed on stdout, for a line to wait for. */
  output(): string;
  stop(): Promise<void>;
}

/** Every child still running: killed when this process exits, however it exits. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

function start(script: string, env: Record<string, string>): Child {
  // BENCH_CHILD_PROFILE_DIR: every child writes a V8 CPU profile there when it exits.
  const profile = process.env.BENCH_CHILD_PROFILE_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CHILD_PROFILE_DIR}`]
    : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', join(root, script)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  // A spawn that fails, or a pipe that breaks (EPIPE) as a child dies under load, is reported
  // by `until` or the caller's own checks; left unhandled it would end the benchmark.
  child.on('error', (error) => console.error(`${script}: ${error.message}`));
  child.stdout!.on('error', () => undefined);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.length > 1_000_000) out = out.slice(-100_000);
  });
  return {
    process: child,
    output: () => out,
    stop: () =>
      new Promise((resolve) => {
        // A child killed by a signal (an out-of-memory abort, say) has a signalCode, not an exitCode.
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * How long a child may take to start: `BENCH_START_TIMEOUT_MS`, or 60 s scaled by how loaded the
 * machine is (its 1-minute load average per core, at least 1×). On a shared machine the API's
 * start (tsx compiling its sources, the migrations check) took over 30 s at a load of 6 on 2 cores.
 */
export function startTimeoutMs(): number {
  const set = Number(process.env.BENCH_START_TIMEOUT_MS);
  if (Number.isFinite(set) && set > 0) return set;
  return loadScaled(60_000);
}

/** Waits for `check`, failing at once if `child` exits first, and after {@link startTimeoutMs}. */
async function until(child: ChildProcess, check: () => boolean, what: string): Promise<void> {
  const timeoutMs = startTimeoutMs();
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`exited (${child.exitCode ?? child.signalCode}) before ${what}`);
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs / 1000} s waiting for ${what} (${loadNote()}; BENCH_START_TIMEOUT_MS)`,
      );
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The LLM stub as a process on a free port, with fault settings (e.g. `{ LLM_STUB_LATENCY_MS: '500' }`). */
export async function startStubProcess(env: Record<string, string> = {}): Promise<Child & { url: string }> {
  const child = start('apps/llm-stub/src/main.ts', { PORT: '0', ...env });
  let url = '';
  await until(
    child.process,
    () => {
      url = /OPENAI_BASE_URL=(\S+?)\)/.exec(child.output())?.[1] ?? '';
      return url !== '';
    },
    'the stub to listen',
  );
  return { ...child, url };
}

/** A worker process (`npm run worker`) with this environment; resolves once it serves probes. */
export async function startWorkerProcess(env: Record<string, string>): Promise<Child & { port: number }> {
  // Its `worker started` line (info) says it is up and on which port.
  const child = start('apps/worker/src/main.ts', { PORT: '0', ...env, LOG_LEVEL: 'info' });
  let port = 0;
  await until(
    child.process,
    () => {
      const line = child
        .output()
        .split('\n')
        .find((l) => l.includes('worker started'));
      port = line ? (JSON.parse(line) as { port: number }).port : 0;
      return port > 0;
    },
    'the worker to start',
  );
  return { ...child, port };
}

/** The API (`npm run api`) with this environment; resolves with its URL once it listens. */
export async function startApiProcess(env: Record<string, string>): Promise<Child & { url: string }> {
  // Fastify logs `Server listening at http://…` (info) once the port is bound.
  const child = start('apps/api/src/main.ts', { PORT: '0', ...env, LOG_LEVEL: 'info' });
  let url = '';
  await until(
    child.process,
    () => {
      url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(child.output())?.[1] ?? '';
      return url !== '';
    },
    'the API to listen',
  );
  return { ...child, url };
}

/**
 * The node flags a deployment gives an app's container (infra/k8s/<app>.yaml's NODE_OPTIONS, V8's
 * heap limit), so that a benchmark's process runs as deployed.
 */
export function deployedNodeOptions(app: 'api' | 'worker'): string {
  const manifest = readFileSync(join(root, 'infra/k8s', `${app}.yaml`), 'utf8');
  const value = /- name: NODE_OPTIONS\s+value: (.+)/.exec(manifest)?.[1];
  if (!value) throw new Error(`infra/k8s/${app}.yaml sets no NODE_OPTIONS`);
  return value.trim();
}

/** Peak and current resident memory of a process, from /proc (Linux), in MiB. */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

/** CPU seconds (user + system, every thread) a process has used so far, from /proc (Linux). */
export function cpuSecondsOf(pid: number): number {
  // Fields 14 and 15 of /proc/<pid>/stat, counted after the parenthesised command name.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/** CPU seconds used so far by every Postgres server process on this machine (backends included). */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
      total += cpuSecondsOf(Number(entry));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/**
 * A fresh, migrated scratch database for one benchmark run (a previous run's dropped first; a
 * database of that name that Compactor did not create is refused, see `dropScratchDatabase`).
 */
export async function freshDatabase(url: string): Promise<void> {
  await withServer(url, async (client, name) => {
    await dropScratchDatabase(client, name);
    await createScratchDatabase(client, name, { purpose: 'benchmark' });
  });
  await migrateDatabase(url);
}

/** Drops a benchmark's scratch database, if it exists (a large one should not outlive its run). */
export async function dropDatabase(url: string): Promise<void> {
  await withServer(url, (client, name) => dropScratchDatabase(client, name));
}

async function withServer<T>(url: string, fn: (client: pg.Client, name: string) => Promise<T>): Promise<T> {
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.slice(1));
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    return await fn(client, name);
  } finally {
    await client.end();
  }
}
