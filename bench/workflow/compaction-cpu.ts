/**
 * CPU per compaction of a 300-message window against the zero-latency stub, in the process that
 * runs it (the "worker" here) and in the Postgres backends that serve it, with its round trips
 * and statements: the pipeline's own cost, with nothing else in the process.
 */
import { createDatabase, findCompaction } from '@compactor/db';
import { createLlm } from '@compactor/llm';
import { createJobQueues, startCompaction } from '@compactor/queue';
import { noEvents, runCompaction, silentLog } from '@compactor/workflow';
import { profiled } from '../harness';
import { seedSessions } from './sessions';
import { backendCpuBetween, backendCpuSeconds, countStatements, type StatementTimes } from './statements';

/** Messages per compacted session: the window the goal names. */
export const CPU_WINDOW = 300;
/** Compactions run first to warm up the JIT, the tokenizer's ranks and the connections. */
const WARM_UP = 5;

export interface CompactionCpu {
  compactions: number;
  tokensBefore: number | null;
  tokensAfter: number | null;
  /** This process, per compaction: all of it, and the part spent inside the LLM client. */
  workerMs: number;
  workerUserMs: number;
  workerSystemMs: number;
  llmClientMs: number;
  /** The Postgres backends serving this process's pool, per compaction. */
  postgresMs: number;
  roundTrips: number;
  wallMs: number;
  statements: StatementTimes;
}

/** The same client, adding the CPU time of each call to `add` (calls here run one at a time). */
function cpuMetered<T extends object>(target: T, add: (micros: number) => void): T {
  return new Proxy(target, {
    get(object, key, receiver) {
      const value = Reflect.get(object, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const before = process.cpuUsage();
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(object, args);
        } finally {
          const used = process.cpuUsage(before);
          add(used.user + used.system);
        }
      };
    },
  });
}

/**
 * Seeds `sessions` sessions of {@link CPU_WINDOW} messages, requests a manual compaction of each
 * (queue prefix `prefix`, the jobs are never run by a worker), runs the first few to warm up,
 * then measures the rest one after another. `BENCH_CPU_PROFILE` profiles the measured part.
 */
export async function measureCompactionCpu(options: {
  databaseUrl: string;
  redisUrl: string;
  stubUrl: string;
  prefix: string;
  sessions: number;
}): Promise<CompactionCpu> {
  // A name of its own, so its backends can be told from every other connection's.
  const applicationName = `compactor-bench-cpu-${process.pid}`;
  const database = createDatabase(options.databaseUrl, { statementTimeoutMs: 0, applicationName, max: 20 });
  const { db } = database;
  const connection = { url: options.redisUrl, maxRetriesPerRequest: null };
  const queues = createJobQueues({ connection, prefix: options.prefix });
  try {
    const seeded = await seedSessions(db, options.sessions, CPU_WINDOW);
    let llmMicros = 0;
    const llm = cpuMetered(
      createLlm({ apiKey: 'stub', baseURL: options.stubUrl, timeoutMs: 30_000 }),
      (micros) => (llmMicros += micros),
    );
    const resources = { db, llm, clock: () => new Date(), log: silentLog };
    const dispatch = { db, queues, events: noEvents, log: silentLog, clock: () => new Date() };
    const ids: string[] = [];
    for (const session of seeded)
      ids.push((await startCompaction(dispatch, session, { reason: 'manual' })).compaction.id);
    for (const id of ids.slice(0, WARM_UP)) await runCompaction(resources, id, { lastAttempt: true });
    llmMicros = 0;
    const backendsBefore = await backendCpuSeconds(db, applicationName);
    const statements = countStatements();
    const cpuBefore = process.cpuUsage();
    const wallBefore = performance.now();
    await profiled(async () => {
      for (const id of ids.slice(WARM_UP)) {
        const outcome = await runCompaction(resources, id, { lastAttempt: true });
        if (outcome.status !== 'completed') throw new Error(`compaction ${id} ended ${outcome.status}`);
      }
    });
    const wall = performance.now() - wallBefore;
    const cpu = process.cpuUsage(cpuBefore);
    const roundTrips = statements.stop();
    const postgres = backendCpuBetween(backendsBefore, await backendCpuSeconds(db, applicationName));
    const measured = ids.length - WARM_UP;
    const sample = await findCompaction(db, ids[WARM_UP]!);
    return {
      compactions: measured,
      tokensBefore: sample?.tokensBefore ?? null,
      tokensAfter: sample?.tokensAfter ?? null,
      workerMs: (cpu.user + cpu.system) / 1000 / measured,
      workerUserMs: cpu.user / 1000 / measured,
      workerSystemMs: cpu.system / 1000 / measured,
      llmClientMs: llmMicros / 1000 / measured,
      postgresMs: (postgres * 1000) / measured,
      roundTrips: roundTrips / measured,
      wallMs: wall / measured,
      statements: statements.times,
    };
  } finally {
    await queues.close();
    await database.close();
  }
}
