import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { WorkerProcessSettings } from './worker-process';

/** A worker process of the test's own, to be killed as a crash or an OOM kill would. */
export interface KillableWorker {
  readonly pid: number;
  /** SIGKILL: no drain, no lock released, no row touched; resolves once the process is gone. */
  kill(): Promise<void>;
}

const script = fileURLToPath(new URL('./worker-process.ts', import.meta.url));

/** Starts worker-process.ts and resolves once its workers are connected (`ready`). */
export async function startKillableWorker(settings: WorkerProcessSettings): Promise<KillableWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(settings)], {
    // stdin stays open and unused: it closes when this process dies, and the child exits then.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  await new Promise<void>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('ready\n')) resolve();
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`worker process exited before ready (${signal ?? code}):\n${stderr}`)),
    );
  });
  return { pid: child.pid!, kill: () => killed(child) };
}

async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
