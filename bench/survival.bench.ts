/**
 * Survival (issue 39): what an agent still knows after a chain of compactions. Real transcripts
 * (the shared sessions and the repository's examples) run through the live system (API, one
 * worker, the LLM stub) at 16k, 32k and 128k windows; after each completed compaction of a run
 * with at least five, the context served is checked per class — file paths, commands, user
 * facts, constraints, the latest request — for the share **present** (verbatim, whitespace
 * collapsed) and, of the rest, the share **recoverable** through recall. Twice: with the stub's
 * summaries and with its `drop-everything` fault (a plausible summary that keeps no fact). The
 * baselines (bench/survival/baselines.ts) get the same prefix and summary at the same points.
 *
 *   npm run bench -- survival
 *   BENCH_SURVIVAL_QUICK=1 npm run bench -- survival      (4 transcripts, 32k only)
 *   BENCH_SURVIVAL_FILES=a.jsonl,b.jsonl npm run bench -- survival
 *   BENCH_SURVIVAL_WINDOWS=32000,128000 BENCH_SURVIVAL_SUMMARIZERS=drop-everything npm run bench -- survival
 *   BENCH_SURVIVAL_MISSES=1 …      (prints each missed latest request and modified file)
 *
 * It drops and recreates the database compactor_bench_survival of DATABASE_URL's server
 * (BENCH_DATABASE_URL names another) and clears the queue prefix {compactor-bench-survival}
 * (BENCH_QUEUE_PREFIX).
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  Children,
  deleteQueueKeys,
  dropDatabase,
  recreateScratchDatabase,
  startStack,
  withDatabase,
} from '@compactor/stack';
import { loadTranscripts } from '../apps/replay/src/replay';
import type { Transcript } from '../apps/replay/src/transcript';
import { BASELINES } from './survival/baselines';
import { driveTranscript, type Api, type DriveResult } from './survival/drive';
import { addCounts, emptyCounts } from './survival/measure';
import { renderSurvivalTable, type SurvivalRow } from './survival/table';

const QUICK = process.env.BENCH_SURVIVAL_QUICK === '1';
const WINDOWS =
  process.env.BENCH_SURVIVAL_WINDOWS?.split(',').map(Number) ??
  (QUICK ? [32_000] : [16_000, 32_000, 128_000]);
const MIN_CHAIN = 5;
const CONCURRENCY = Number(process.env.BENCH_SURVIVAL_CONCURRENCY ?? 4);
const ALL_SUMMARIZERS = ['stub', 'drop-everything'] as const;
type Summarizer = (typeof ALL_SUMMARIZERS)[number];
const SUMMARIZERS = ALL_SUMMARIZERS.filter(
  (s) => process.env.BENCH_SURVIVAL_SUMMARIZERS?.split(',').includes(s) ?? true,
);

const defaultFiles = [
  '/work/shared/sessions/real-sessions.jsonl',
  fileURLToPath(new URL('../examples/sessions/coding-sessions.jsonl', import.meta.url)),
  fileURLToPath(new URL('../apps/replay/examples/coding-session.jsonl', import.meta.url)),
];
const files = (process.env.BENCH_SURVIVAL_FILES?.split(',') ?? defaultFiles).filter((f) => existsSync(f));
const all = loadTranscripts(files);
const transcripts = QUICK ? all.filter((t) => t.messages.length >= 60).slice(0, 4) : all;

const env = { ...process.env };
delete env.OPENAI_API_KEY;
delete env.OPENAI_BASE_URL;
const baseUrl = env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const databaseUrl = env.BENCH_DATABASE_URL ?? withDatabase(baseUrl, 'compactor_bench_survival');
const queuePrefix = env.BENCH_QUEUE_PREFIX ?? '{compactor-bench-survival}';
const API_KEY = 'bench';

async function setStubOutput(stubUrl: string, output: Summarizer): Promise<void> {
  const response = await fetch(`${stubUrl.replace(/\/v1\/?$/, '')}/_stub/faults`, {
    method: output === 'stub' ? 'DELETE' : 'PUT',
    headers: { 'content-type': 'application/json' },
    body: output === 'stub' ? undefined : JSON.stringify({ output }),
  });
  if (!response.ok) throw new Error(`the stub refused its faults: ${response.status}`);
}

/** Runs `work` over `items`, `limit` at a time, results in input order. */
async function pooled<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

function rowsOf(summarizer: Summarizer, window: number, results: DriveResult[]): SurvivalRow[] {
  const used = results.filter((r) => r.compactions >= MIN_CHAIN);
  const compactions = used.reduce((n, r) => n + r.compactions, 0);
  const common = { window, summarizer, transcripts: used.length, compactions };
  const sum = (pick: (r: DriveResult) => ReturnType<typeof emptyCounts>) =>
    used.reduce((into, r) => addCounts(into, pick(r)), emptyCounts());
  return [
    { ...common, system: 'compactor', counts: sum((r) => r.compactor) },
    ...BASELINES.map((b) => ({ ...common, system: b, counts: sum((r) => r.baselines[b]) })),
  ];
}

const started = performance.now();
const children = new Children(env, () => undefined);
try {
  await Promise.all([recreateScratchDatabase(databaseUrl, 'bench'), deleteQueueKeys(redisUrl, queuePrefix)]);
  const stack = await startStack(children, {
    databaseUrl,
    redisUrl,
    queuePrefix,
    apiKey: API_KEY,
    workers: 1,
    provider: null,
    workerEnv: { WORKER_CONCURRENCY: String(Math.max(4, CONCURRENCY * 2)) },
    apiEnv: { TENANT_MAX_ACTIVE_COMPACTIONS: '0' },
    client: { retry: { maxRetries: 0 } },
  });
  const api: Api = { client: stack.client, apiUrl: stack.apiUrl, apiKey: API_KEY };
  console.log(
    `${transcripts.length} transcripts (${files.join(', ')}), windows ${WINDOWS.join(', ')}, chains of at least ${MIN_CHAIN}`,
  );
  const rows: SurvivalRow[] = [];
  let kindRecall = false;
  let run = 0;
  for (const summarizer of SUMMARIZERS) {
    await setStubOutput(stack.stubUrl!, summarizer);
    for (const window of WINDOWS) {
      const results = await pooled(transcripts, CONCURRENCY, (t: Transcript) =>
        driveTranscript(api, t, window, `survival-${run++}`).catch((error: Error) => {
          console.log(`  ${t.key} at ${window}: failed (${error.message})`);
          return null;
        }),
      );
      const done = results.filter((r): r is DriveResult => r !== null);
      kindRecall ||= done.some((r) => r.kindRecall);
      rows.push(...rowsOf(summarizer, window, done));
      const used = done.filter((r) => r.compactions >= MIN_CHAIN);
      const longest = Math.max(0, ...done.map((r) => r.compactions));
      const beyond = used.reduce((n, r) => n + r.latestBeyondAllowance, 0);
      console.log(
        `${summarizer} at ${window}: ${used.length} of ${transcripts.length} transcripts made a chain of ${MIN_CHAIN}+ (longest ${longest}; ` +
          `${beyond} latest-request checks longer than the pinned allowance; ${((performance.now() - started) / 1000).toFixed(0)} s so far)`,
      );
    }
  }
  console.log('');
  console.log(renderSurvivalTable(rows));
  console.log('');
  console.log(`recall?kind= answered: ${kindRecall ? 'yes' : 'no (q= only)'}`);
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${((performance.now() - started) / 1000).toFixed(0)} s in all`,
  );
} finally {
  await children.stopAll({ last: ['llm-stub'] });
  await dropDatabase(databaseUrl).catch(() => undefined);
}
