/**
 * Child processes of a local stack (API, workers, LLM stub) for the demo and the replay: each runs
 * `node --import tsx <entry>`, its output is kept (the tail is shown when it dies), its warnings
 * are reported as they come, and every one of them is stopped when the parent ends, however it ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const guard = pathToFileURL(join(here, 'parent-guard.mjs')).href;
/** How much of a child's output is kept for the error message when it dies. */
const KEEP_CHARS = 64 * 1024;

/** A child that exited when it should not have (during start-up or while the parent ran). */
export class ChildExitedError extends Error {
  override readonly name = 'ChildExitedError';
}

export interface Child {
  name: string;
  pid: number;
  process: ChildProcess;
  /** Resolves with the first value `find` returns for the output so far (or a later line). */
  waitFor<T>(what: string, find: (output: string) => T | undefined, timeoutMs?: number): Promise<T>;
  /** The last lines of its stdout and stderr. */
  tail(lines?: number): string;
}

/** A pino line a child wrote at warn level or above, for the parent to show. */
export interface ChildLogLine {
  child: string;
  level: number;
  msg: string;
  fields: Record<string, unknown>;
}

export class Children {
  private readonly all: Child[] = [];
  private stopping = false;
  private failure: ChildExitedError | null = null;
  private readonly failureListeners = new Set<(error: ChildExitedError) => void>();

  /**
   * `baseEnv`: the environment every child starts from (the parent's own, usually); each child's
   * variables go over it. Packages never read `process.env` themselves: the caller hands it in.
   */
  constructor(
    private readonly baseEnv: NodeJS.ProcessEnv,
    private readonly onLog: (line: ChildLogLine) => void = () => undefined,
  ) {
    // The last resort (an exception, process.exit): no child outlives its parent.
    process.once('exit', () => this.killAll());
  }

  /** Starts `script` (relative to the repository root) with these variables over the base environment. */
  start(name: string, script: string, env: Record<string, string>): Child {
    if (this.stopping) throw new Error('the stack is stopping');
    // COMPACTOR_CPU_PROFILE_DIR: each child writes a V8 CPU profile there when it exits (for
    // finding where a process's time goes; NODE_OPTIONS may not carry --cpu-prof).
    const profileDir = this.baseEnv.COMPACTOR_CPU_PROFILE_DIR;
    const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    const proc = spawn(
      process.execPath,
      [...profile, '--import', 'tsx', '--import', guard, join(root, script)],
      {
        cwd: root,
        env: { ...this.baseEnv, ...env },
        // stdin stays open and unused: when the parent dies, it closes, and the guard stops the child.
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group: a Ctrl-C in the terminal reaches the parent, which stops the
        // children itself (none cuts the others off first).
        detached: true,
      },
    );
    let out = '';
    let err = '';
    let partial = '';
    const waiters = new Set<() => void>();
    const wake = () => {
      for (const waiter of [...waiters]) waiter();
    };
    proc.stdout!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      out = (out + text).slice(-KEEP_CHARS);
      partial += text;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) this.logLine(name, line);
      wake();
    });
    proc.stderr!.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString()).slice(-KEEP_CHARS);
    });
    let exited = false;
    // 'close', not 'exit': by then its stdout and stderr are read to the end (the tail is complete).
    proc.on('close', (code, signal) => {
      exited = true;
      wake();
      if (this.stopping) return;
      const error = new ChildExitedError(
        `${name} (pid ${proc.pid}) exited unexpectedly (${signal ?? `code ${code}`})\n${tail(20)}`,
      );
      if (!this.failure) this.failure = error;
      for (const listener of this.failureListeners) listener(error);
    });
    proc.on('error', (error) => {
      err += `\nspawn failed: ${error.message}`;
    });

    const tail = (lines = 20) => {
      const show = (label: string, text: string) => {
        if (text.trim() === '') return '';
        const kept = text.trimEnd().split('\n').slice(-lines);
        return `  ${label}:\n${kept.map((l) => `    ${l}`).join('\n')}`;
      };
      return [show('stderr', err), show('stdout', out)].filter(Boolean).join('\n') || '  (no output)';
    };

    const child: Child = {
      name,
      pid: proc.pid ?? -1,
      process: proc,
      tail,
      waitFor: (what, find, timeoutMs = 30_000) =>
        new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            done();
            reject(new ChildExitedError(`${name} did not ${what} within ${timeoutMs / 1000} s\n${tail()}`));
          }, timeoutMs);
          const check = () => {
            let found: ReturnType<typeof find>;
            try {
              found = find(out);
            } catch {
              found = undefined;
            }
            if (found !== undefined) {
              done();
              resolve(found);
            } else if (exited) {
              done();
              reject(
                new ChildExitedError(
                  `${name} exited before it could ${what} (${proc.signalCode ?? `code ${proc.exitCode}`})\n${tail()}`,
                ),
              );
            }
          };
          const done = () => {
            clearTimeout(timer);
            waiters.delete(check);
          };
          waiters.add(check);
          check();
        }),
    };
    this.all.push(child);
    return child;
  }

  /** Rejects as soon as any child exits while the parent still needs it. */
  failed(): Promise<never> {
    return new Promise((_, reject) => {
      if (this.failure) return reject(this.failure);
      this.failureListeners.add(reject);
    });
  }

  /**
   * SIGTERM to every child still running, SIGKILL to those still there after `graceMs`; the
   * children named in `last` only once the others are gone (the LLM stub, so that a worker
   * draining a summary is not cut off from its model).
   */
  async stopAll({ graceMs = 5_000, last = [] as string[] } = {}): Promise<void> {
    this.stopping = true;
    const stop = (proc: ChildProcess) =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
        proc.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        proc.kill('SIGTERM');
      });
    await Promise.all(this.all.filter((c) => !last.includes(c.name)).map((c) => stop(c.process)));
    await Promise.all(this.all.filter((c) => last.includes(c.name)).map((c) => stop(c.process)));
  }

  /** The names of the children still running. */
  running(): string[] {
    return this.all
      .filter(({ process: proc }) => proc.exitCode === null && proc.signalCode === null)
      .map(({ name }) => name);
  }

  /** Synchronous: SIGKILL to every child still running (from an `exit` handler). */
  killAll(): void {
    this.stopping = true;
    for (const { process: proc } of this.all) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    }
  }

  private logLine(child: string, line: string): void {
    if (!line.startsWith('{')) return;
    try {
      const {
        level,
        msg,
        time: _t,
        pid: _p,
        hostname: _h,
        name: _n,
        ...fields
      } = JSON.parse(line) as {
        level?: number;
        msg?: string;
        [key: string]: unknown;
      };
      if (typeof level === 'number' && level >= 40 && !this.stopping) {
        this.onLog({ child, level, msg: msg ?? '', fields });
      }
    } catch {
      // Not a log line.
    }
  }
}
