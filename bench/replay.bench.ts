/**
 * Replay overhead (issue 11): a 1,500-message coding session replayed through the embedded
 * Compactor (API, one worker and the zero-latency LLM stub as processes), turn by turn as
 * `npm run replay` does. With a stub that answers at once, the wall time is the overhead: the
 * goal is under 10 s. Printed beside it: where the replay's time went (appends over HTTP,
 * waiting for compactions, checking what they left, waiting for turn prunes) and, as the
 * baseline in the same process, the same messages appended over HTTP in one batch per turn
 * without waiting for anything.
 *
 *   npm run bench -- replay
 *   BENCH_REPLAY_MESSAGES=3000 BENCH_REPLAY_POLICY=opencode npm run bench -- replay
 *
 * It drops and recreates the database compactor_bench_replay of DATABASE_URL's server
 * (BENCH_DATABASE_URL names another) and clears the queue prefix {compactor-bench-replay}
 * (BENCH_QUEUE_PREFIX).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseOptions } from '../apps/replay/src/options';
import { runReplay } from '../apps/replay/src/replay';
import { Children, dropDatabase, recreateScratchDatabase, startStack, withDatabase } from '@compactor/stack';
import { generateLongCodingSession } from '@compactor/testing/fixtures';

const MESSAGES = Number(process.env.BENCH_REPLAY_MESSAGES ?? 1_500);
const POLICY = process.env.BENCH_REPLAY_POLICY;
const GOAL_MS = 10_000;

const dir = mkdtempSync(join(tmpdir(), 'compactor-bench-replay-'));
const messages = generateLongCodingSession(MESSAGES, { withUsage: true });
const file = join(dir, 'session.jsonl');
writeFileSync(file, `${JSON.stringify({ source: 'bench', title: 'generated', messages })}\n`);
const bytes = Buffer.byteLength(JSON.stringify(messages));
console.log(
  `transcript: ${messages.length} messages, ${(bytes / 1e6).toFixed(1)} MB (generated coding sessions)`,
);

// The stub, not a provider the caller's shell may name.
const env = { ...process.env };
delete env.OPENAI_API_KEY;
delete env.OPENAI_BASE_URL;
const options = parseOptions(
  [file, '--out', join(dir, 'report'), '--concurrency', '1', ...(POLICY ? ['--policy', POLICY] : [])],
  env,
);
// BENCH_DATABASE_URL / BENCH_QUEUE_PREFIX move what the bench drops and clears, as in every bench.
const databaseUrl =
  process.env.BENCH_DATABASE_URL ?? withDatabase(options.databaseUrl, 'compactor_bench_replay');
const queuePrefix = process.env.BENCH_QUEUE_PREFIX ?? '{compactor-bench-replay}';
const quiet = { write: () => true };

async function replayOnce() {
  const started = performance.now();
  const { report } = await runReplay(
    options,
    { env, out: quiet },
    { databaseUrl, recreate: true, queuePrefix },
  );
  return { wallMs: performance.now() - started, run: report.runs[0]! };
}

/**
 * Baseline: the same messages appended over HTTP with the same policy, without waiting for the
 * compactions they trigger (a worker runs them meanwhile) or checking them. Usage reports are
 * left out: unscaled, they would say the context overflows after the first compaction.
 */
async function appendOnly() {
  // The replay's own kind of database (scratch: commits do not wait for the WAL flush).
  await recreateScratchDatabase(databaseUrl);
  const children = new Children(env, () => undefined);
  try {
    const stack = await startStack(children, {
      databaseUrl,
      redisUrl: options.redisUrl,
      queuePrefix,
      apiKey: 'bench',
      workers: 1,
      provider: null,
      // As the replay's client: a refusal fails the baseline instead of being waited out.
      client: { retry: { maxRetries: 0 } },
    });
    await stack.client.createSession({
      id: 'baseline',
      model: { id: 'stub-summarizer', provider: 'openai', contextWindow: 32_000, maxOutputTokens: 4_000 },
    });
    const started = performance.now();
    for (const { usage: _usage, ...message } of messages) {
      await stack.client.appendMessages('baseline', [message]);
    }
    return performance.now() - started;
  } finally {
    await children.stopAll({ last: ['llm-stub'] });
  }
}

try {
  const { wallMs, run } = await replayOnce();
  if (run.status !== 'completed') throw new Error(`the replay failed: ${run.error}`);
  const outcomes = new Map<string, number>();
  for (const c of run.compactions) outcomes.set(c.outcome, (outcomes.get(c.outcome) ?? 0) + 1);
  const ms = (value: number) => `${(value / 1000).toFixed(2)} s`;
  console.log(
    `policy: ${run.variant.label}, window ${run.window}, compactions: ${[...outcomes].map(([k, v]) => `${v} ${k}`).join(', ')}`,
  );
  console.log(`replay, start to report (stack start included):  ${ms(wallMs)}`);
  console.log(
    `replay run (session created → last compaction checked): ${ms(run.durationMs)}  goal < ${ms(GOAL_MS)}: ${run.durationMs < GOAL_MS ? 'met' : 'NOT met'}`,
  );
  console.log(
    `  appends (${messages.length} POSTs):        ${ms(run.timing.appendMs)}  (${(run.timing.appendMs / messages.length).toFixed(2)} ms each)`,
  );
  console.log(
    `  waiting for compactions:   ${ms(run.waitMs)}  (${run.compactions.length}, ${(run.waitMs / Math.max(1, run.compactions.length)).toFixed(0)} ms each)`,
  );
  console.log(`  checking what they left:   ${ms(run.timing.checkMs)}`);
  console.log(`  waiting for turn prunes:   ${ms(run.timing.pruneWaitMs)}`);
  const rest =
    run.durationMs - run.timing.appendMs - run.waitMs - run.timing.checkMs - run.timing.pruneWaitMs;
  console.log(`  the replay's own work:     ${ms(rest)}`);
  const baselineMs = await appendOnly();
  console.log(
    `baseline: the same ${messages.length} appends over HTTP, same policy, no waits: ${ms(baselineMs)} (${(baselineMs / messages.length).toFixed(2)} ms each); replay / baseline ${(run.durationMs / baselineMs).toFixed(2)}×`,
  );
  process.exitCode = run.durationMs < GOAL_MS ? 0 : 1;
} finally {
  await dropDatabase(databaseUrl).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
