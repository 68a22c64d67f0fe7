/**
 * Process-level reliability harness: real worker PROCESSES (`apps/worker/src/main.ts`) against
 * this test file's own Postgres database and a Redis (shared, under a unique hash-tagged prefix,
 * or a private `redis-server`), the LLM stub in the test process, and compactions requested the
 * way the API requests them (`startCompaction`: row + outbox, then enqueue).
 *
 * Children never outlive the test process: `useWorkerFleet` kills them in afterAll, an `exit`
 * handler SIGKILLs whatever is left, and each worker preloads `orphan-guard.mjs`, which exits
 * when the test process's end of its stdin pipe closes (a crashed or killed vitest fork).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, inject } from 'vitest';
import {
  assembleContext,
  resolveModelInfo,
  toOpenAIMessages,
  validateContext,
  type PolicyInput,
} from '@compactor/core';
import {
  appendMessages,
  createDatabase,
  insertSession,
  loadContextRows,
  newId,
  prepareMessages,
  type Database,
  type Db,
  type MessageInput,
  type SessionRow,
} from '@compactor/db';
import { startLlmStub, type LlmStub, type LlmStubOptions } from '@compactor/llm-stub';
import {
  createJobQueues,
  noEvents,
  silentLog,
  startCompaction,
  type DispatchDeps,
  type JobPolicy,
  type JobQueues,
} from '@compactor/queue';
import { useTestDatabase, type TestDatabase } from '@compactor/testing';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { getTokenizer } from '@compactor/tokenizer';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../../apps/worker/src/main.ts', import.meta.url));
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
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? 30_000);
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

/** A redis-server of this test's own (FLUSHALL-able), on a free port, without persistence. */
export async function startPrivateRedis(): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
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

// ---------------------------------------------------------------------------------------------
// Configuration shared by the tests
// ---------------------------------------------------------------------------------------------

/** A prefix no other test uses, hash-tagged like production's (`{compactor}`). */
export function uniqueHashTaggedPrefix(label = 'rel'): string {
  return `{${label}-${randomUUID()}}`;
}

/** The worker environment for these tests: short locks, a fast reconciler, quick retries. */
export function workerEnv(base: {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  llmUrl: string;
  [key: string]: string;
}): Record<string, string> {
  const { databaseUrl, redisUrl, prefix, llmUrl, ...overrides } = base;
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    OPENAI_BASE_URL: llmUrl,
    OPENAI_API_KEY: 'stub',
    WORKER_CONCURRENCY: '4',
    LOCK_DURATION_MS: '2000',
    RECONCILE_INTERVAL_MS: '500',
    STEP_TIMEOUT_MS: '3000',
    JOB_BACKOFF_MS: '50',
    JOB_ATTEMPTS: '5',
    SHUTDOWN_TIMEOUT_MS: '2000',
    LOG_LEVEL: 'warn',
    ...overrides,
  };
}

/** The job policy the test process enqueues with; must match the workers' JOB_ATTEMPTS / JOB_BACKOFF_MS. */
export function jobPolicy(attempts: number, backoffBaseMs: number): JobPolicy {
  return {
    attempts,
    backoffBaseMs,
    keepCompleted: { count: 1_000, ageSeconds: 3600 },
    keepFailed: { count: 1_000, ageSeconds: 3600 },
  };
}

/** What the API process holds to request compactions: the database and the queues. */
export interface Requester {
  deps: DispatchDeps;
  queues: JobQueues;
  /** Removes this prefix's queues from Redis and closes the connections. */
  close(options?: { obliterate?: boolean }): Promise<void>;
}

export function createRequester(db: Db, redisUrl: string, prefix: string, policy: JobPolicy): Requester {
  const queues = createJobQueues({
    connection: { url: redisUrl, maxRetriesPerRequest: null },
    prefix,
    policy,
  });
  return {
    queues,
    deps: { db, queues, events: noEvents, log: silentLog, clock: () => new Date() },
    async close({ obliterate = true } = {}) {
      if (obliterate) {
        for (const name of ['compact', 'prune'] as const) {
          await queues
            .queue(name)
            .obliterate({ force: true })
            .catch(() => undefined);
        }
      }
      await queues.close();
    },
  };
}

/** The shared services vitest's global setup found. */
export const sharedRedisUrl = () => inject('redisUrl');

// ---------------------------------------------------------------------------------------------
// A test file's rig: database, queue prefix, Redis, LLM stub, requester and worker fleet
// ---------------------------------------------------------------------------------------------

export interface RigOptions {
  /** Names the file's queue prefix (`{label-…}`). */
  label: string;
  /**
   * The workers' JOB_ATTEMPTS / JOB_BACKOFF_MS, and the job policy the requester enqueues with
   * (default 5 and 50 ms, `workerEnv`'s).
   */
  attempts?: number;
  backoffMs?: number;
  /** A redis-server of this file's own (FLUSHALL-able) instead of the shared one. */
  privateRedis?: boolean;
  /** Worker environment on top of `workerEnv`'s defaults and the attempts/backoff above. */
  workerEnv?: Record<string, string>;
  /** How the LLM stub starts (e.g. with `faults`). */
  stub?: LlmStubOptions;
  /** The requester writes through a pool of its own of this size (default: the test database's pool). */
  requesterPool?: number;
  /** Whether closing the requester removes the prefix's queues from Redis (default true). */
  obliterateQueues?: boolean;
  /** Runs last in beforeAll, once everything is up. */
  setup?: (rig: ReliabilityRig) => Promise<unknown>;
  /** Runs in afterAll right after every worker is killed, before anything else closes. */
  teardown?: () => Promise<unknown>;
}

export interface ReliabilityRig {
  readonly database: TestDatabase;
  readonly prefix: string;
  readonly redisUrl: string;
  readonly stub: LlmStub;
  readonly requester: Requester;
  /** The database the requester writes through (its own pool with `requesterPool`). */
  readonly requesterDb: Db;
  readonly fleet: WorkerFleet;
  /** Requests a compaction of every session at once, the way the API does (`reason: 'manual'`). */
  requestCompactions(sessions: SessionRow[]): Promise<Array<Awaited<ReturnType<typeof startCompaction>>>>;
  /**
   * Seeds `count` coding sessions (`seedCodingSessions`), starts `workers` workers, then requests
   * a compaction of every session; returns the sessions and their compactions' ids, in order.
   */
  compactCodingSessions(options: {
    count: number;
    firstSeed: number;
    workers: number;
  }): Promise<{ sessions: SessionRow[]; ids: string[] }>;
}

/**
 * Everything a reliability test file runs against, set up in beforeAll and torn down in afterAll
 * (workers killed first, the database dropped last). Call once at the top level of a test file;
 * read the fields inside tests or hooks.
 */
export function useReliabilityRig(options: RigOptions): ReliabilityRig {
  const { attempts = 5, backoffMs = 50 } = options;
  const database = useTestDatabase();
  const prefix = uniqueHashTaggedPrefix(options.label);
  let redis: Awaited<ReturnType<typeof startPrivateRedis>> | undefined;
  let stub: LlmStub | undefined;
  let pool: Database | undefined;
  let requester: Requester | undefined;
  const redisUrl = () => (options.privateRedis ? started(redis).url : sharedRedisUrl());
  const fleet = useWorkerFleet(() =>
    workerEnv({
      databaseUrl: database.url,
      redisUrl: redisUrl(),
      prefix,
      llmUrl: started(stub).url,
      JOB_ATTEMPTS: String(attempts),
      JOB_BACKOFF_MS: String(backoffMs),
      ...options.workerEnv,
    }),
  );

  const rig: ReliabilityRig = {
    database,
    prefix,
    fleet,
    get redisUrl() {
      return redisUrl();
    },
    get stub() {
      return started(stub);
    },
    get requester() {
      return started(requester);
    },
    get requesterDb() {
      return pool ? pool.db : database.db;
    },
    async requestCompactions(sessions) {
      const { deps } = rig.requester;
      return Promise.all(sessions.map((s) => startCompaction(deps, s, { reason: 'manual' })));
    },
    async compactCodingSessions({ count, firstSeed, workers }) {
      const sessions = await seedCodingSessions(database.db, count, { firstSeed });
      await fleet.spawnMany(workers);
      const requested = await rig.requestCompactions(sessions);
      return { sessions, ids: requested.map((r) => r.compaction.id) };
    },
  };

  beforeAll(async () => {
    if (options.privateRedis) redis = await startPrivateRedis();
    stub = await startLlmStub(options.stub);
    if (options.requesterPool !== undefined) {
      pool = createDatabase(database.url, { max: options.requesterPool, applicationName: 'compactor-test' });
    }
    requester = createRequester(rig.requesterDb, redisUrl(), prefix, jobPolicy(attempts, backoffMs));
    await options.setup?.(rig);
  });

  afterAll(async () => {
    await fleet.killAll();
    await options.teardown?.();
    await requester?.close({ obliterate: options.obliterateQueues ?? true });
    await pool?.close();
    await stub?.close();
    await redis?.stop();
  });

  return rig;
}

function started<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('useReliabilityRig(): only inside tests and hooks');
  return value;
}

// ---------------------------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------------------------

const counter = getTokenizer('o200k_base');

/** A session stored exactly as the API stores one (like packages/queue's workflow test support). */
export async function seedSession(
  db: Db,
  messages: MessageInput[],
  options: { policy?: PolicyInput; contextWindow?: number } = {},
): Promise<SessionRow> {
  const model = resolveModelInfo({
    id: 'stub-summarizer',
    provider: 'stub',
    contextWindow: options.contextWindow ?? 32_000,
    maxOutputTokens: 4_000,
  });
  const session = await insertSession(db, {
    tenantId: 'tenant-rel',
    id: newId('ses'),
    modelId: model.id,
    provider: model.provider,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxOutputTokens,
    inputLimit: model.inputLimit,
    policy: options.policy ?? {},
    createHash: 'test',
  });
  if (!session) throw new Error('session insert failed');
  await appendTo(db, session, messages);
  return session;
}

/** `count` coding sessions of 3–4 turns (alternating), generated from seeds `firstSeed`, `firstSeed + 1`, … */
export async function seedCodingSessions(
  db: Db,
  count: number,
  options: { firstSeed: number; policy?: PolicyInput },
): Promise<SessionRow[]> {
  const sessions: SessionRow[] = [];
  for (let i = 0; i < count; i++) {
    sessions.push(
      await seedSession(db, generateCodingSession({ turns: 3 + (i % 2), seed: options.firstSeed + i }), {
        policy: options.policy,
      }),
    );
  }
  return sessions;
}

export async function appendTo(db: Db, session: SessionRow, messages: MessageInput[]): Promise<void> {
  await appendMessages(db, session.pk, await prepareMessages(messages, counter, new Date()));
}

/** A follow-up exchange to append while a compaction runs (user asks, assistant answers). */
export function followUp(tag: string): MessageInput[] {
  return [
    {
      id: `${tag}-u`,
      role: 'user',
      parts: [{ type: 'text', text: `Follow-up ${tag}: also log the export duration.` }],
    },
    {
      id: `${tag}-a`,
      role: 'assistant',
      finish: 'stop',
      parts: [{ type: 'text', text: `Done (${tag}): the exporter logs its duration in milliseconds.` }],
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Reading the system of record
// ---------------------------------------------------------------------------------------------

export type CompactionState = {
  id: string;
  session_pk: string;
  status: string;
  step: string | null;
  attempts: number;
  fence: number;
  error_code: string | null;
  boundary_seq: number | null;
  covers_through_seq: number | null;
  summary_message_ids: string[];
  /** Epoch milliseconds (drizzle hands raw timestamps over as strings). */
  finished_ms: number | null;
  details: Record<string, unknown>;
};

/** Compaction rows (all, or these), ordered by id. */
export async function compactionStates(db: Db, ids?: string[]): Promise<CompactionState[]> {
  const result = await db.execute<CompactionState>(sql`
    select id, session_pk, status, step, attempts, fence, error_code, boundary_seq, covers_through_seq,
           summary_message_ids, (extract(epoch from finished_at) * 1000)::float8 as finished_ms, details
    from compactions
    ${ids ? sql`where id = any(${sql.param(ids)}::text[])` : sql``}
    order by id
  `);
  return result.rows;
}

export const TERMINAL = new Set(['completed', 'failed', 'skipped']);

/** Polls until every compaction is terminal; returns their rows in the order of `ids`. Fails with what is still open. */
export async function waitForTerminal(db: Db, ids: string[], timeoutMs: number): Promise<CompactionState[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await compactionStates(db, ids);
    const open = rows.filter((r) => !TERMINAL.has(r.status));
    if (open.length === 0 && rows.length === ids.length) {
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id) => byId.get(id)!);
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${open.length} of ${ids.length} compactions still active after ${timeoutMs} ms: ` +
          open
            .slice(0, 10)
            .map((r) => `${r.id} ${r.status}/${r.step ?? '-'} attempts=${r.attempts}`)
            .join(', '),
      );
    }
    await sleep(100);
  }
}

/** Summary messages stored per compaction (`compaction_id = id and summary`). */
export async function summaryMessageCounts(
  db: Db,
): Promise<Map<string, { total: number; summaryText: number }>> {
  const result = await db.execute<{ compaction_id: string; total: string; summary_text: string }>(sql`
    select compaction_id, count(*) as total,
           count(*) filter (where metadata->>'type' = 'compaction_summary') as summary_text
    from messages where summary and compaction_id is not null group by compaction_id
  `);
  return new Map(
    result.rows.map((r) => [
      r.compaction_id,
      { total: Number(r.total), summaryText: Number(r.summary_text) },
    ]),
  );
}

/** What a context read must agree with: one snapshot of the session's messages and compactions. */
interface Truth {
  messages: Array<{ id: string; seq: number; summary: boolean; compaction_id: string | null }>;
  compactions: Array<{
    id: string;
    status: string;
    boundary_seq: number | null;
    summary_message_ids: string[];
    finished_ms: number | null;
  }>;
  signature: string;
}

async function readTruth(db: Db, sessionPk: number): Promise<Truth> {
  return db.transaction(
    async (tx) => {
      const messages = (
        await tx.execute<Truth['messages'][number]>(
          sql`select id, seq, summary, compaction_id from messages where session_pk = ${sessionPk} order by seq`,
        )
      ).rows;
      const compactions = (
        await tx.execute<Truth['compactions'][number]>(
          sql`select id, status, boundary_seq, summary_message_ids, (extract(epoch from finished_at) * 1000)::float8 as finished_ms
              from compactions where session_pk = ${sessionPk} order by requested_at`,
        )
      ).rows;
      const signature = JSON.stringify([messages.map((m) => m.id), compactions.map((c) => [c.id, c.status])]);
      return { messages, compactions, signature };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

export interface ContextSample {
  /** `uncompacted`: no completed compaction yet; `compacted`: the latest completed one applies. */
  state: 'uncompacted' | 'compacted' | 'unstable';
  compactionId: string | null;
  /** Ids in the order the model sees them. */
  ids: string[];
  problems: string[];
}

/**
 * Reads the context view exactly as the API does (`loadContextRows` + core's `assembleContext`),
 * bracketed by two snapshots of the session's rows; when both agree (nothing committed in
 * between) the view must match them: it validates as an OpenAI request, and it is either every
 * message with no summary (and no summary row stored at all), or exactly the latest completed
 * compaction's summary message(s) followed by every message from its boundary on. `unstable`:
 * something committed during the read; the caller samples again.
 */
export async function sampleContext(db: Db, sessionPk: number): Promise<ContextSample> {
  const before = await readTruth(db, sessionPk);
  const rows = await loadContextRows(db, sessionPk);
  const view = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : []);
  const after = await readTruth(db, sessionPk);
  const ids = view.messages.map((m) => m.id);
  if (before.signature !== after.signature)
    return { state: 'unstable', compactionId: null, ids, problems: [] };

  const problems: string[] = [];
  const issues = validateContext(toOpenAIMessages(view));
  if (issues.length > 0) problems.push(`context does not validate: ${JSON.stringify(issues).slice(0, 500)}`);
  const completed = after.compactions
    .filter((c) => c.status === 'completed')
    .sort((a, b) => (a.finished_ms ?? 0) - (b.finished_ms ?? 0));
  const latest = completed.at(-1);
  const summaries = after.messages.filter((m) => m.summary);
  if (!latest) {
    if (summaries.length > 0) {
      problems.push(
        `summary messages ${summaries.map((m) => `${m.id}(${m.compaction_id})`).join(',')} stored while no compaction completed`,
      );
    }
    const expected = after.messages.filter((m) => !m.summary).map((m) => m.id);
    if (view.compactionId !== null)
      problems.push(`view names compaction ${view.compactionId} but none completed`);
    if (JSON.stringify(ids) !== JSON.stringify(expected)) {
      problems.push(
        `uncompacted view is not every message in order: got ${ids.join(',')}, expected ${expected.join(',')}`,
      );
    }
    return { state: 'uncompacted', compactionId: null, ids, problems };
  }
  if (view.compactionId !== latest.id)
    problems.push(`view applies ${view.compactionId}, latest completed is ${latest.id}`);
  if (latest.boundary_seq === null) problems.push(`completed compaction ${latest.id} has no boundary`);
  if (latest.summary_message_ids.length === 0)
    problems.push(`completed compaction ${latest.id} has no summary message`);
  const ownSummaries = summaries.filter((m) => m.compaction_id === latest.id).map((m) => m.id);
  if (JSON.stringify([...ownSummaries].sort()) !== JSON.stringify([...latest.summary_message_ids].sort())) {
    problems.push(
      `stored summary rows ${ownSummaries.join(',')} ≠ the compaction's ${latest.summary_message_ids.join(',')}`,
    );
  }
  const kept = after.messages
    .filter((m) => !m.summary && m.seq >= (latest.boundary_seq ?? Infinity))
    .map((m) => m.id);
  const expected = [...latest.summary_message_ids, ...kept];
  if (JSON.stringify(ids) !== JSON.stringify(expected)) {
    problems.push(
      `compacted view is not summary + messages from boundary ${latest.boundary_seq}: got ${ids.join(',')}, expected ${expected.join(',')}`,
    );
  }
  return { state: 'compacted', compactionId: latest.id, ids, problems };
}

/** `sampleContext`, retried while writes land in the middle of the read. */
export async function stableContext(db: Db, sessionPk: number, tries = 20): Promise<ContextSample> {
  for (let i = 0; i < tries; i++) {
    const sample = await sampleContext(db, sessionPk);
    if (sample.state !== 'unstable') return sample;
    await sleep(10);
  }
  throw new Error(`context of session ${sessionPk} never stable over ${tries} reads`);
}

// ---------------------------------------------------------------------------------------------
// Assertions shared by the tests
// ---------------------------------------------------------------------------------------------

/** No worker exited without the harness signalling it. */
export function expectNoWorkerDiedOnItsOwn(fleet: WorkerFleet, message?: string): void {
  expect(
    fleet.diedOnTheirOwn.map((h) => h.id),
    message,
  ).toEqual([]);
}

/** Polls (up to 20 s) until at least `atLeast` of these compactions are running. */
export async function waitForRunning(
  db: Db,
  ids: string[],
  atLeast: number,
  intervalMs: number,
): Promise<void> {
  await expect
    .poll(async () => (await compactionStates(db, ids)).filter((r) => r.status === 'running').length, {
      timeout: 20_000,
      interval: intervalMs,
    })
    .toBeGreaterThanOrEqual(atLeast);
}

/** The compaction's summary messages are stored: as many as it names, one of them the summary text. */
export function expectSummaryStored(
  summaries: Awaited<ReturnType<typeof summaryMessageCounts>>,
  row: CompactionState,
): void {
  expect(summaries.get(row.id), row.id).toEqual({
    total: row.summary_message_ids.length,
    summaryText: 1,
  });
}

/** The session's (stable) context view: no problem found, and it matches `expected`. */
export async function expectContext(
  db: Db,
  sessionPk: number,
  label: string,
  expected: Partial<ContextSample>,
): Promise<ContextSample> {
  const view = await stableContext(db, sessionPk);
  expect(view.problems, label).toEqual([]);
  expect(view).toMatchObject(expected);
  return view;
}

/**
 * Every compaction completed with an LLM summary (within `maxAttempts` tries, when given), its
 * summary messages are stored, and every session's context view applies a compaction.
 */
export async function expectAllCompletedByLlm(
  db: Db,
  rows: CompactionState[],
  sessions: SessionRow[],
  options: { maxAttempts?: number } = {},
): Promise<void> {
  for (const row of rows) {
    expect(row, row.id).toMatchObject({ status: 'completed', error_code: null });
    expect(row.details.writtenBy, row.id).toBe('llm');
    if (options.maxAttempts !== undefined) {
      expect(row.attempts, row.id).toBeLessThanOrEqual(options.maxAttempts);
    }
  }
  const summaries = await summaryMessageCounts(db);
  for (const row of rows) expectSummaryStored(summaries, row);
  for (const session of sessions) await expectContext(db, session.pk, session.id, { state: 'compacted' });
}

/**
 * Reads the context of `sessions` in a loop until stopped; collects every violation instead of
 * throwing from the background (the test asserts on them).
 */
export function startContextReader(db: Db, sessionPks: number[], intervalMs = 30) {
  const stats = { reads: 0, unstable: 0, uncompacted: 0, compacted: 0, errors: 0 };
  const problems: string[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const pk of sessionPks) {
        if (stopped) break;
        try {
          const sample = await sampleContext(db, pk);
          stats.reads++;
          stats[sample.state]++;
          for (const p of sample.problems) if (problems.length < 50) problems.push(`session ${pk}: ${p}`);
        } catch (error) {
          // A read may fail while the test terminates backends; anything else is reported.
          stats.errors++;
          if (problems.length < 50) problems.push(`session ${pk}: read failed: ${(error as Error).message}`);
        }
      }
      await sleep(intervalMs);
    }
  })();
  return {
    stats,
    problems,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** A small seeded PRNG (mulberry32), so a chaos run can be replayed from its printed seed. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
