import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const execFileAsync = promisify(execFile);

/** Servers still running: killed if the test process exits without closing them. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) {
    if (!child.pid) continue;
    for (const pid of [...readChildren(child.pid), child.pid]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
});

/**
 * A Postgres server of one test's own, in a temporary directory, for outage tests that stop and
 * freeze a real server: the shared one is never touched. `stop()` shuts it down at once
 * (connections reset, new ones refused); `start()` brings it back on the same port and data;
 * `freeze()` SIGSTOPs the postmaster and every backend (sockets stay open, nothing answers, new
 * connections wait in the kernel's backlog); `resume()` SIGCONTs them; `close()` ends it and
 * removes the directory.
 */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  freeze(): void;
  resume(): void;
  close(): Promise<void>;
}

/** The newest installed server's binaries (Debian's layout), or whatever `initdb` is on PATH. */
async function binDir(): Promise<string> {
  try {
    const { stdout } = await execFileAsync('pg_config', ['--bindir']);
    return stdout.trim();
  } catch {
    const { stdout } = await execFileAsync('sh', [
      '-c',
      'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1',
    ]);
    return stdout.trim();
  }
}

/** As root, the server runs as `postgres` (it refuses root); otherwise as the current user. */
async function serverUser(): Promise<{ uid: number; gid: number } | null> {
  if (process.getuid?.() !== 0) return null;
  const id = async (flag: string) => Number((await execFileAsync('id', [flag, 'postgres'])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}

/** The pids whose parent is `pid` (Linux /proc). */
function readChildren(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the command name in parentheses, which may hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await binDir();
  const user = await serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'compactor-pg-'));
  const data = join(dir, 'data');
  if (user) chownSync(dir, user.uid, user.gid);
  const asUser = user ? { uid: user.uid, gid: user.gid } : {};
  await new Promise<void>((resolve, reject) => {
    execFile(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale', 'C'],
      { ...asUser, cwd: dir },
      (error, _stdout, stderr) => (error ? reject(new Error(`initdb failed: ${stderr}`)) : resolve()),
    );
  });
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let server: ChildProcess | null = null;
  let output = '';

  const start = async () => {
    output = '';
    server = spawn(
      join(bin, 'postgres'),
      [
        '-D',
        data,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `unix_socket_directories=${dir}`,
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
      ],
      { ...asUser, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const child = server;
    running.add(child);
    child.once('exit', () => running.delete(child));
    server.stdout?.on('data', (chunk: Buffer) => (output += chunk));
    server.stderr?.on('data', (chunk: Buffer) => (output += chunk));
    const deadline = Date.now() + 20_000;
    for (;;) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('select 1');
        return;
      } catch (error) {
        if (Date.now() > deadline || server.exitCode !== null) {
          throw new Error(`postgres did not start: ${(error as Error).message}\n${output}`, { cause: error });
        }
        await sleep(100);
      } finally {
        await client.end().catch(() => undefined);
      }
    }
  };
  // Postgres puts every backend in a session of its own: signal the postmaster and each child.
  const signalAll = (signal: NodeJS.Signals) => {
    const pid = server?.exitCode === null ? server.pid : undefined;
    if (!pid) return;
    const children = readChildren(pid);
    // Stopping: the postmaster first (it forks no more); resuming: it last.
    const order = signal === 'SIGSTOP' ? [pid, ...children] : [...children, pid];
    for (const target of order) {
      try {
        process.kill(target, signal);
      } catch {
        // exited meanwhile
      }
    }
  };
  const stop = async () => {
    const child = server;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    signalAll('SIGCONT');
    // Immediate shutdown: every backend quits at once, as a crashed or killed server would.
    signalAll('SIGQUIT');
    await exited;
    server = null;
  };

  await start();
  return {
    url,
    port,
    stop,
    start,
    freeze: () => signalAll('SIGSTOP'),
    resume: () => signalAll('SIGCONT'),
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
