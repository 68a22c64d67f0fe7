/**
 * Worker processes and private Redis servers: spawning, watching, killing and respawning real
 * worker PROCESSES (`apps/worker/src/main.ts`).
 *
 * Children never outlive the test process: `useWorkerFleet` kills them in afterAll, an `exit`
 * handler SIGKILLs whatever is left, and each worker preloads `orphan-guard.mjs`, which exits
 * when the test process's end of its stdin pipe closes (a crashed or killed vitest fork).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeEach } from 'vitest';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../../apps/worker/src/main.ts', import.meta.url));
const execFileAsync = promisify(execFile);
const ORPHAN_GUARD = fileURLToPath(new URL('./orphan-guard.mjs', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------------------------

/** Every child this test process started and has not seen exit; SIGKILLed if the process exits. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** A TCP port nothing listens on right now (the kernel's pick). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The last lines a process wrote, per stream, bounded. */
class LogBuffer {
  readonly lines: Array<{ stream: 'stdout' | 'stderr'; line: string }> = [];
  private partial = { stdout: '', stderr: '' };
  dropped = 0;
  constructor(private readonly max: number) {}

  write(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    const text = this.partial[stream] + chunk.toString('utf8');
    const pieces = text.split('\n');
    this.partial[stream] = pieces.pop() ?? '';
    for (const line of pieces) if (line.trim()) this.push(stream, line);
  }

  flush(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream].trim()) this.push(stream, this.partial[stream]);
      this.partial[stream] = '';
    }
  }

  private push(stream: 'stdout' | 'stderr', line: string): void {
    this.lines.push({ stream, line });
    if (this.lines.length > this.max) {
      this.lines.shift();
      this.dropped++;
    }
  }

  tail(n: number): string[] {
    return this.lines.slice(-n).map((l) => `${l.stream === 'stderr' ? '!' : ' '} ${l.line}`);
  }
}

export interface WorkerHandle {
  /** 1, 2, 3… in spawn order within the fleet. */
  readonly id: number;
  readonly pid: number;
  readonly port: number;
  readonly child: ChildProcess;
  readonly log: LogBuffer;
  /** Set once /healthz answered. */
  ready: boolean;
  /** When it was spawned, and how long it took until /healthz answered. */
  readonly startedAt: number;
  startupMs: number | null;
  /** Set when the harness sent the signal that ended it (a worker that dies on its own is a finding). */
  killedBy: NodeJS.Signals | null;
  exit: { code: number | null; signal: NodeJS.Signals | null } | null;
  readonly exited: Promise<void>;
}

export interface FleetOptions {
  /** The worker's environment (on top of PATH/HOME); read at every spawn. */
  env: () => Record<string, string>;
  readyTimeoutMs?: number;
  logLines?: number;
}

/** Spawns, watches and kills worker processes. */
export class WorkerFleet {
  private readonly handles: WorkerHandle[] = [];
  private seq = 0;

  constructor(private readonly options: FleetOptions) {}

  /** Workers not yet exited (starting or running). */
  get alive(): WorkerHandle[] {
    return this.handles.filter((h) => h.exit === null && h.killedBy === null);
  }

  /** Running workers that answered /healthz. */
  get ready(): WorkerHandle[] {
    return this.alive.filter((h) => h.ready);
  }

  /** Every worker ever spawned, in order. */
  get all(): readonly WorkerHandle[] {
    return this.handles;
  }

  /** Workers that exited although the harness never signalled them (crashes, fatal errors). */
  get diedOnTheirOwn(): WorkerHandle[] {
    return this.handles.filter((h) => h.exit !== null && h.killedBy === null);
  }

  /** Starts a worker and waits until its /healthz answers (retrying a port another process took). */
  async spawn(extraEnv: Record<string, string> = {}): Promise<WorkerHandle> {
    for (let tries = 1; ; tries++) {
      const handle = await this.start(extraEnv);
      try {
        await this.waitReady(handle);
        return handle;
      } catch (error) {
        const clash = handle.log.lines.some((l) => l.line.includes('EADDRINUSE'));
        if (!clash || tries >= 3) throw error;
      }
    }
  }

  /** Starts `count` workers at once and waits for all of them. */
  async spawnMany(count: number, extraEnv: Record<string, string> = {}): Promise<WorkerHandle[]> {
    return Promise.all(Array.from({ length: count }, () => this.spawn(extraEnv)));
  }

  /** Starts a worker without waiting for it to be ready. */
  async start(extraEnv: Record<string, string> = {}): Promise<WorkerHandle> {
    // A fixed free port: at LOG_LEVEL=warn the worker does not log the port it picked.
    const port = await freePort();
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
      ...this.options.env(),
      ...extraEnv,
      PORT: String(port),
      HOST: '127.0.0.1',
    };
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', ORPHAN_GUARD, WORKER_MAIN], {
      cwd: REPO_ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    track(child);
    const log = new LogBuffer(this.options.logLines ?? 5_000);
    child.stdout?.on('data', (chunk: Buffer) => log.write('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => log.write('stderr', chunk));
    const handle: WorkerHandle = {
      id: ++this.seq,
      pid: child.pid ?? -1,
      port,
      child,
      log,
      ready: false,
      startedAt: Date.now(),
      startupMs: null,
      killedBy: null,
      exit: null,
      exited: new Promise<void>((resolve) => {
        child.once('exit', (code, signal) => {
          log.flush();
          handle.exit = { code, signal };
          resolve();
        });
      }),
    };
    child.once('error', (error) => log.write('stderr', Buffer.from(`spawn error: ${error.message}\n`)));
    this.handles.push(handle);
    return handle;
  }

  /** Polls the worker's /healthz until it answers 200; fails fast when the process exits. */
  async waitReady(handle: WorkerHandle): Promise<void> {
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? 120_000);
    while (Date.now() < deadline) {
      if (handle.exit || handle.killedBy) {
        throw new Error(
          `worker #${handle.id} (pid ${handle.pid}) exited before it was ready: ${JSON.stringify(handle.exit)}\n${handle.log.tail(30).join('\n')}`,
        );
      }
      try {
        const response = await fetch(`http://127.0.0.1:${handle.port}/healthz`, {
          signal: AbortSignal.timeout(1_000),
        });
        if (response.ok) {
          handle.ready = true;
          handle.startupMs = Date.now() - handle.startedAt;
          return;
        }
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    throw new Error(
      `worker #${handle.id} (pid ${handle.pid}) not ready in time\n${handle.log.tail(30).join('\n')}`,
    );
  }

  /** Signals one worker and waits until it is gone. */
  async kill(handle: WorkerHandle, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (handle.exit) return;
    handle.killedBy ??= signal;
    handle.child.kill(signal);
    await handle.exited;
  }

  /** Signals every live worker at the same moment, then waits until all are gone. */
  async killAll(signal: NodeJS.Signals = 'SIGKILL'): Promise<WorkerHandle[]> {
    const victims = this.handles.filter((h) => h.exit === null);
    for (const h of victims) {
      h.killedBy ??= signal;
      h.child.kill(signal);
    }
    await Promise.all(victims.map((h) => h.exited));
    return victims;
  }

  /** SIGTERM (the worker drains), SIGKILL after `graceMs`. */
  async stopAll(graceMs = 5_000): Promise<void> {
    const victims = this.handles.filter((h) => h.exit === null);
    for (const h of victims) {
      h.killedBy ??= 'SIGTERM';
      h.child.kill('SIGTERM');
    }
    const all = Promise.all(victims.map((h) => h.exited));
    const timedOut = await Promise.race([all.then(() => false), sleep(graceMs).then(() => true)]);
    if (timedOut) await this.killAll('SIGKILL');
  }

  /** Parsed JSON log lines (pino) of every worker, with the worker's id. */
  jsonLogs(): Array<Record<string, unknown> & { worker: number }> {
    return this.handles.flatMap((h) =>
      h.log.lines.flatMap((l) => {
        try {
          const parsed = JSON.parse(l.line) as Record<string, unknown>;
          return parsed && typeof parsed === 'object' ? [{ ...parsed, worker: h.id }] : [];
        } catch {
          return [];
        }
      }),
    );
  }

  /** Each worker's fate and last log lines, for a failing test's output. */
  diagnostics(linesPerWorker = 40): string {
    return this.handles
      .map((h) => {
        const fate = h.exit
          ? `exited ${JSON.stringify(h.exit)}${h.killedBy ? ` (killed by harness: ${h.killedBy})` : ' ON ITS OWN'}`
          : h.ready
            ? 'running'
            : 'starting';
        const dropped = h.log.dropped ? ` (${h.log.dropped} earlier lines dropped)` : '';
        return [
          `--- worker #${h.id} pid ${h.pid} port ${h.port}: ${fate}${dropped}`,
          ...h.log.tail(linesPerWorker),
        ].join('\n');
      })
      .join('\n');
  }
}

/**
 * A fleet for this test file: every worker is SIGKILLed in afterAll (and an `exit` handler
 * catches the rest), and a failing test prints each worker's last log lines. Call at the top
 * level of a test file, AFTER useTestDatabase() so its workers die before the database is dropped.
 */
export function useWorkerFleet(
  env: () => Record<string, string>,
  options: Partial<FleetOptions> = {},
): WorkerFleet {
  const fleet = new WorkerFleet({ env, ...options });
  beforeEach(({ onTestFailed }) => {
    onTestFailed(() => {
      console.error(`worker processes of the failed test:\n${fleet.diagnostics()}`);
    });
  });
  afterAll(async () => {
    await fleet.killAll('SIGKILL');
  });
  return fleet;
}

/**
 * A redis-server of this test's own (FLUSHALL-able), on a free port, without persistence;
 * `extraArgs` go on its command line.
 */
export async function startPrivateRedis(
  extraArgs: string[] = [],
): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  track(child);
  const output: string[] = [];
  child.stdout?.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr?.on('data', (c: Buffer) => output.push(c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (error) {
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`redis-server did not start: ${(error as Error).message}\n${output.join('')}`, {
          cause: error,
        });
      }
      await sleep(50);
    } finally {
      probe.disconnect();
    }
  }
  return {
    url,
    port,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * A Redis Cluster of `masters` masters (no replicas) on loopback, every slot assigned; `url` is
 * the `redis-cluster://` form REDIS_URL takes.
 */
export async function startRedisCluster(
  masters = 3,
): Promise<{ url: string; ports: number[]; stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'compactor-cluster-'));
  const nodes: Array<Awaited<ReturnType<typeof startPrivateRedis>>> = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      // The cluster bus port is set, not derived (port + 10000 may not exist for a high port).
      const bus = await freePort();
      nodes.push(
        await startPrivateRedis([
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(bus),
          '--cluster-config-file',
          `nodes-${i}.conf`,
          '--dir',
          dir,
        ]),
      );
    }
    const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
    await execFileAsync('redis-cli', [
      '--cluster',
      'create',
      ...addresses,
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    const deadline = Date.now() + 20_000;
    for (const node of nodes) {
      for (;;) {
        const { stdout } = await execFileAsync('redis-cli', ['-p', String(node.port), 'cluster', 'info']);
        if (stdout.includes('cluster_state:ok')) break;
        if (Date.now() > deadline) throw new Error(`cluster not ok on ${node.port}:\n${stdout}`);
        await sleep(100);
      }
    }
    return { url: `redis-cluster://${addresses.join(',')}`, ports: nodes.map((n) => n.port), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

const API_MAIN = fileURLToPath(new URL('../../apps/api/src/main.ts', import.meta.url));

/** An API process (`apps/api/src/main.ts`), its output kept, once `/healthz` answers. */
export interface ApiProcess {
  child: ChildProcess;
  url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
}

/** Starts the API with `env` (on top of PATH/HOME, a free PORT, HOST); fails if it does not come up. */
export async function startApiProcess(env: Record<string, string>): Promise<ApiProcess> {
  const port = await freePort();
  const chunks: string[] = [];
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', ORPHAN_GUARD, API_MAIN], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  track(child);
  child.stdout?.on('data', (c: Buffer) => chunks.push(c.toString()));
  child.stderr?.on('data', (c: Buffer) => chunks.push(c.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const up = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { child, url, output: () => chunks.join('') };
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`the API did not start\n${chunks.join('')}`);
    }
    await sleep(100);
  }
}
