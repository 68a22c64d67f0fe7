/**
 * Fairness across tenants in the workers: tenant B's single compaction, idle and behind tenant
 * A's backlog of 200 (no cap on active compactions, so all 200 are queued). One worker process
 * (WORKER_CONCURRENCY 16, the default) against the LLM stub answering in 200 ms. B's latency is
 * its row's `finished_at - requested_at`. B asks at several moments while A's backlog drains
 * (`PROBES`, 250 ms apart), each on a session of its own; the ratio is B's median latency behind
 * the backlog over its median idle latency. The baseline run enqueues the same requests without
 * their priority (FIFO, as before the tenant rank), in the same process on the same worker.
 * `npm run bench -- worker-fairness`.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import {
  createDatabase,
  insertSession,
  newId,
  type Db,
  type NewMessage,
  type SessionRow,
} from '@compactor/db';
import { createJobQueues, startCompaction, type DispatchDeps, type JobQueues } from '@compactor/queue';
import { deleteQueueKeys } from '@compactor/stack';
import { noEvents, silentLog } from '@compactor/workflow';
import { freshDatabase, startStubProcess, startWorkerProcess } from './processes';
import { seedMessages } from './seed-messages';
import { loadScaled } from './harness';

const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_worker_fairness';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 200);
const IDLE_RUNS = 7;
const PROBES = 7;
const PROBE_EVERY_MS = 250;
const LLM_LATENCY_MS = 200;

/** Message `i` of a small coding session: a request, then an answer (one summarizer call compacts it). */
function message(i: number): NewMessage {
  const user = i % 2 === 0;
  const text = user
    ? `please fix the failing test in module ${i} `.repeat(20)
    : `Fixed module ${i}. `.repeat(40);
  return {
    id: `m${i}`,
    role: user ? 'user' : 'assistant',
    parts: [{ type: 'text', text, tokens: user ? 180 : 160 }],
    finish: user ? null : 'stop',
    error: null,
    usage: null,
    createdAt: new Date(1_700_000_000_000 + i * 1000),
    metadata: {},
    contentHash: `h${i}`,
  };
}

async function seedSessions(db: Db, tenantId: string, count: number): Promise<SessionRow[]> {
  const sessions: SessionRow[] = [];
  for (let s = 0; s < count; s++) {
    const session = await insertSession(db, {
      tenantId,
      id: newId('ses'),
      modelId: 'stub-summarizer',
      provider: 'stub',
      contextWindow: 128_000,
      maxOutputTokens: 8_000,
      policy: { prune: false },
      createHash: 'bench',
    });
    await seedMessages(
      db,
      session!,
      Array.from({ length: 12 }, (_, i) => message(i)),
    );
    sessions.push(session!);
  }
  return sessions;
}

/** The queues as they were before the tenant rank: every compaction enqueued without priority. */
function withoutPriority(queues: JobQueues): JobQueues {
  return { ...queues, enqueue: (name, jobId, payload) => queues.enqueue(name, jobId, payload) };
}

const request = async (deps: DispatchDeps, session: SessionRow) =>
  (await startCompaction(deps, session, { reason: 'manual', keepRecentTokens: 500 })).compaction.id;

/** Polls until every compaction ended; throws unless all completed. */
async function waitForAll(db: Db, ids: string[], timeoutMs = loadScaled(300_000)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.execute<{ done: number; bad: number }>(sql`
      select count(*) filter (where status not in ('pending', 'running'))::int as done,
             count(*) filter (where status in ('failed', 'skipped'))::int as bad
      from compactions where id = any(${sql.param(ids)}::text[])`);
    if (rows[0]!.bad > 0) throw new Error(`${rows[0]!.bad} compactions did not complete`);
    if (rows[0]!.done === ids.length) return;
    if (Date.now() > deadline) throw new Error(`only ${rows[0]!.done}/${ids.length} finished`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `finished_at - requested_at` of each compaction, in ms, in the order given. */
async function latencies(db: Db, ids: string[]): Promise<number[]> {
  const { rows } = await db.execute<{ id: string; ms: number }>(sql`
    select id, extract(epoch from finished_at - requested_at)::float8 * 1000 as ms
    from compactions where id = any(${sql.param(ids)}::text[])`);
  const byId = new Map(rows.map((r) => [r.id, r.ms]));
  return ids.map((id) => byId.get(id)!);
}

/** `started_at - requested_at` (waiting in the queue) of each compaction, in ms, in the order given. */
async function queueWaits(db: Db, ids: string[]): Promise<number[]> {
  const { rows } = await db.execute<{ id: string; ms: number }>(sql`
    select id, extract(epoch from started_at - requested_at)::float8 * 1000 as ms
    from compactions where id = any(${sql.param(ids)}::text[])`);
  const byId = new Map(rows.map((r) => [r.id, r.ms]));
  return ids.map((id) => byId.get(id)!);
}

/** How many of the backlog's compactions had finished when each probe finished. */
async function aheadOf(db: Db, backlog: string[], probes: string[]): Promise<number[]> {
  const { rows } = await db.execute<{ ahead: number }>(sql`
    select (select count(*) from compactions a
            where a.id = any(${sql.param(backlog)}::text[]) and a.finished_at <= p.finished_at)::int as ahead
    from unnest(${sql.param(probes)}::text[]) with ordinality as u(id, n)
    join compactions p on p.id = u.id order by u.n`);
  return rows.map((r) => r.ahead);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const fmt = (ms: number) => `${ms.toFixed(0)} ms`;

/** B's compactions with nothing else queued, one at a time. */
async function idle(deps: DispatchDeps, sessions: SessionRow[]): Promise<number[]> {
  const ids: string[] = [];
  for (const session of sessions) {
    const id = await request(deps, session);
    await waitForAll(deps.db, [id]);
    ids.push(id);
  }
  return latencies(deps.db, ids);
}

/** A's backlog queued at once, then B's compactions, one every PROBE_EVERY_MS while it drains. */
async function behindBacklog(deps: DispatchDeps, backlog: SessionRow[], probes: SessionRow[]) {
  const backlogIds: string[] = [];
  for (const session of backlog) backlogIds.push(await request(deps, session));
  const probeIds: string[] = [];
  for (const session of probes) {
    probeIds.push(await request(deps, session));
    await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
  }
  await waitForAll(deps.db, [...backlogIds, ...probeIds]);
  return {
    latencies: await latencies(deps.db, probeIds),
    waits: await queueWaits(deps.db, probeIds),
    ahead: await aheadOf(deps.db, backlogIds, probeIds),
  };
}

await freshDatabase(DATABASE_URL);
const database = createDatabase(DATABASE_URL, {
  statementTimeoutMs: 0,
  applicationName: 'compactor-bench',
  max: 10,
});
const { db } = database;
const prefix = `{bench-worker-fair-${randomUUID().slice(0, 8)}}`;
const stub = await startStubProcess({ LLM_STUB_LATENCY_MS: String(LLM_LATENCY_MS) });
const worker = await startWorkerProcess({
  DATABASE_URL,
  REDIS_URL,
  QUEUE_PREFIX: prefix,
  OPENAI_BASE_URL: stub.url,
  OPENAI_API_KEY: 'stub',
  LOG_LEVEL: 'warn',
});
const queues = createJobQueues({ connection: { url: REDIS_URL, maxRetriesPerRequest: null }, prefix });
const fair: DispatchDeps = { db, queues, events: noEvents, log: silentLog, clock: () => new Date() };
const fifo: DispatchDeps = { ...fair, queues: withoutPriority(queues) };

try {
  // Warm-up: the worker's first compactions pay for its JIT and connections.
  await idle(fair, await seedSessions(db, 'warm-up', 5));

  const results: Array<[string, number[], number[], number[], number[]]> = [];
  for (const [label, deps] of [
    ['with the tenant rank', fair],
    ['baseline (FIFO, no priority)', fifo],
  ] as const) {
    const idleMs = await idle(deps, await seedSessions(db, `b-idle-${results.length}`, IDLE_RUNS));
    const loaded = await behindBacklog(
      deps,
      await seedSessions(db, `a-${results.length}`, BACKLOG),
      await seedSessions(db, `b-${results.length}`, PROBES),
    );
    results.push([label, idleMs, loaded.latencies, loaded.waits, loaded.ahead]);
  }

  console.log(
    `tenant B's single compaction, idle and behind tenant A's backlog of ${BACKLOG} ` +
      `(1 worker process, WORKER_CONCURRENCY 16, stub ${LLM_LATENCY_MS} ms per call; ` +
      `B asks ${PROBES}× every ${PROBE_EVERY_MS} ms while A's backlog drains)`,
  );
  for (const [label, idleMs, loadedMs, waits, ahead] of results) {
    console.log(`\n${label}`);
    console.log(`  idle:          median ${fmt(median(idleMs))}  (${idleMs.map(fmt).join(', ')})`);
    console.log(`  behind A:      median ${fmt(median(loadedMs))}  (${loadedMs.map(fmt).join(', ')})`);
    console.log(`  … of which in the queue: ${waits.map(fmt).join(', ')}`);
    console.log(`  A's finished before each of B's: ${ahead.join(', ')}`);
    console.log(
      `  ratio (median behind A / median idle): ${(median(loadedMs) / median(idleMs)).toFixed(2)}; ` +
        `worst probe / median idle: ${(Math.max(...loadedMs) / median(idleMs)).toFixed(2)}`,
    );
  }
} finally {
  await worker.stop();
  await stub.stop();
  await queues.close();
  await deleteQueueKeys(REDIS_URL, prefix);
  await database.close();
}
