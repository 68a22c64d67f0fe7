/**
 * Benchmarks that measure the real system run its processes: the LLM stub and worker
 * processes, each in its own Node process so its CPU and memory are its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase, migrateDatabase, quoteIdent } from '@compactor/db';

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
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The LLM stub as a process on a free port, with fault settings (e.g. `{ LLM_STUB_LATENCY_MS: '500' }`). */
export async function startStubProcess(env: Record<string, string> = {}): Promise<Child & { url: string }> {
  const child = start('apps/llm-stub/src/main.ts', { PORT: '0', ...env });
  let url = '';
  await until(() => {
    url = /OPENAI_BASE_URL=(\S+?)\)/.exec(child.output())?.[1] ?? '';
    return url !== '';
  }, 'the stub to listen');
  return { ...child, url };
}

/** A worker process (`npm run worker`) with this environment; resolves once it serves probes. */
export async function startWorkerProcess(env: Record<string, string>): Promise<Child & { port: number }> {
  // Its `worker started` line (info) says it is up and on which port.
  const child = start('apps/worker/src/main.ts', { PORT: '0', ...env, LOG_LEVEL: 'info' });
  let port = 0;
  await until(() => {
    const line = child
      .output()
      .split('\n')
      .find((l) => l.includes('worker started'));
    port = line ? (JSON.parse(line) as { port: number }).port : 0;
    return port > 0;
  }, 'the worker to start');
  return { ...child, port };
}

/** The API (`npm run api`) with this environment; resolves with its URL once it listens. */
export async function startApiProcess(env: Record<string, string>): Promise<Child & { url: string }> {
  // Fastify logs `Server listening at http://…` (info) once the port is bound.
  const child = start('apps/api/src/main.ts', { PORT: '0', ...env, LOG_LEVEL: 'info' });
  let url = '';
  await until(() => {
    url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(child.output())?.[1] ?? '';
    return url !== '';
  }, 'the API to listen');
  return { ...child, url };
}

/** Peak and current resident memory of a process, from /proc (Linux), in MiB. */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

/** A fresh, migrated database for one benchmark run (dropped first if a previous run left it). */
export async function freshDatabase(url: string): Promise<void> {
  await dropDatabase(url);
  await ensureDatabase(url);
  await migrateDatabase(url);
}

/** Drops a benchmark's database, if it exists (a large one should not outlive its run). */
export async function dropDatabase(url: string): Promise<void> {
  const admin = new URL(url);
  const name = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`drop database if exists ${quoteIdent(name)} with (force)`);
  await client.end();
}
