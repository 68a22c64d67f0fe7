/**
 * One build's measurement of {@link measureCompactionCpu} in a process of its own, so that its
 * CPU is its own and a baseline tree (baseline-tree.ts) can run it with that tree's packages.
 * Prints one JSON line, prefixed `compaction-cpu `.
 */
import { measureCompactionCpu } from './compaction-cpu';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const result = await measureCompactionCpu({
  databaseUrl: env('DATABASE_URL'),
  redisUrl: env('REDIS_URL'),
  stubUrl: env('OPENAI_BASE_URL'),
  prefix: env('QUEUE_PREFIX'),
  sessions: Number(process.env.BENCH_CPU_SESSIONS ?? 30),
});
console.log(`compaction-cpu ${JSON.stringify({ ...result, statements: [...result.statements] })}`);
