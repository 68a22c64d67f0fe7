/**
 * Prompt-cache cost and the agent's wait, in replay (docs/REPLAY.md, "Prompt cache and the
 * agent's wait"): the shared real sessions (`/work/shared/sessions/real-sessions.jsonl`, outside
 * the repository; BENCH_SESSIONS names another file) replayed through the embedded Compactor as
 * a claude-sonnet-4-5 agent, with an LLM stub that answers after a fixed latency, under three
 * variants that differ in one field each:
 *
 *   opencode-pruning       pruning.cacheAware false: prune after every turn whatever the cache
 *   cache-aware            pruning.cacheAware true: a prune that breaks a warm cache must repay it
 *   cache-aware-prepared   the same, with prepare { atRatio: 0.7 }: the summary is drafted ahead
 *
 * Per session and variant it prints the agent's cost through the prompt cache (cache reads,
 * writes, uncached input, output), the summarizer's cost, and the wait at each trigger crossing
 * (total, p50, p95), then checks the two goals (pass/fail, never a failing exit): cache-aware
 * costs less than OpenCode-style pruning on every session that prunes (and, weaker, never more,
 * and less wherever the two sent other prompts: the same prompts cost the same); prepared cuts the
 * agent's median wait at a trigger under 10 % of the summarizer's latency, over every wait of
 * the run and per session.
 *
 *   npm run bench -- replay-cache
 *   BENCH_SUMMARIZER_LATENCY_MS=2000 BENCH_CALL_LATENCY_MS=500 BENCH_REPLAY_WINDOW=64000 npm run bench -- replay-cache
 *
 *   BENCH_LINES=6,7 BENCH_KEEP_DATABASE=1 npm run bench -- replay-cache
 *
 * BENCH_LINES re-measures some sessions only (their lines in the file); BENCH_KEEP_DATABASE=1
 * keeps the database and the report (report.json) afterwards, to read their rows.
 *
 * It drops and recreates the database compactor_bench_replay_cache of DATABASE_URL's server
 * (BENCH_DATABASE_URL names another) and clears the queue prefix {compactor-bench-replay-cache}
 * (BENCH_QUEUE_PREFIX).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropDatabase, withDatabase } from '@compactor/stack';
import { parseOptions } from '../apps/replay/src/options';
import { runReplay } from '../apps/replay/src/replay';
import { totalCostUsd } from '../apps/replay/src/report/cost-table';
import { runTotals, type RunReport } from '../apps/replay/src/report/model';
import { waitStats } from '../apps/replay/src/runner/trigger-waits';

const SESSIONS = process.env.BENCH_SESSIONS ?? '/work/shared/sessions/real-sessions.jsonl';
const MODEL = process.env.BENCH_MODEL ?? 'claude-sonnet-4-5';
const WINDOW = Number(process.env.BENCH_REPLAY_WINDOW ?? 64_000);
const SUMMARIZER_LATENCY_MS = Number(process.env.BENCH_SUMMARIZER_LATENCY_MS ?? 2_000);
const CALL_LATENCY_MS = Number(process.env.BENCH_CALL_LATENCY_MS ?? 500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 3);
/** Re-measuring a few sessions: their 1-based lines in SESSIONS, e.g. `2,8,11` (all when unset). */
const LINES = process.env.BENCH_LINES?.split(',').map(Number);
/** Keep the database afterwards, to read its compactions and prepared summaries. */
const KEEP_DATABASE = process.env.BENCH_KEEP_DATABASE === '1';
/** OpenCode's protect / minimum (40k / 20k of a 200k window) scaled to the replayed window. */
const PRUNING = { protectTokens: Math.round(WINDOW * 0.2), minimumTokens: Math.round(WINDOW * 0.1) };

const VARIANTS = {
  'opencode-pruning': { pruning: { ...PRUNING, cacheAware: false } },
  'cache-aware': { pruning: { ...PRUNING, cacheAware: true } },
  'cache-aware-prepared': { pruning: { ...PRUNING, cacheAware: true }, prepare: { atRatio: 0.7 } },
} as const;

if (!existsSync(SESSIONS)) {
  console.log(`skipped: ${SESSIONS} is absent (the shared sessions live outside the repository)`);
  process.exit(0);
}

interface SharedSession {
  repo?: string;
  commit?: string;
  messages: { role: string; usage?: { cacheRead?: number } }[];
}

const sessions = readFileSync(SESSIONS, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as SharedSession);
const withCacheReads = sessions.filter((s) => s.messages.some((m) => (m.usage?.cacheRead ?? 0) > 0));
// Sessions that recorded their provider's cache reads are the ones to measure; when none did (the
// shared sessions' usage is synthesised), every session is, the cache being simulated either way.
const chosen = withCacheReads.length > 0 ? withCacheReads : sessions;
console.log(
  `${sessions.length} sessions in ${SESSIONS}, ${withCacheReads.length} with recorded cache reads: ` +
    (withCacheReads.length > 0
      ? `replaying those ${withCacheReads.length}`
      : `replaying all ${sessions.length} (the prompt cache is simulated from the served contexts)`),
);
console.log(
  `agent model ${MODEL} (the sessions name none), window ${WINDOW}, pruning protect ${PRUNING.protectTokens} / minimum ${PRUNING.minimumTokens}, ` +
    `summarizer stub latency ${SUMMARIZER_LATENCY_MS} ms, agent call latency ${CALL_LATENCY_MS} ms, no timestamps: consecutive calls within the cache TTL`,
);

const dir = mkdtempSync(join(tmpdir(), 'compactor-bench-replay-cache-'));
const files = chosen.flatMap((session, i) => {
  if (LINES && !LINES.includes(sessions.indexOf(session) + 1)) return [];
  const name = `${String(i + 1).padStart(2, '0')}-${(session.repo ?? 'session').replace(/\W+/g, '_')}-${(session.commit ?? '').slice(0, 7)}.jsonl`;
  const file = join(dir, name);
  writeFileSync(file, `${JSON.stringify({ messages: session.messages })}\n`);
  return [file];
});
const policies = Object.entries(VARIANTS).map(([label, policy]) => {
  const file = join(dir, `${label}.json`);
  writeFileSync(file, JSON.stringify(policy));
  return file;
});

// The stub, not a provider the caller's shell may name.
const env = { ...process.env };
delete env.OPENAI_API_KEY;
delete env.OPENAI_BASE_URL;
const options = parseOptions(
  [
    ...files,
    ...policies.flatMap((file) => ['--policy', file]),
    '--window',
    String(WINDOW),
    '--model',
    MODEL,
    '--summarizer-latency',
    String(SUMMARIZER_LATENCY_MS),
    '--call-latency',
    String(CALL_LATENCY_MS),
    '--concurrency',
    String(CONCURRENCY),
    '--out',
    join(dir, 'report'),
  ],
  env,
);
const databaseUrl =
  process.env.BENCH_DATABASE_URL ?? withDatabase(options.databaseUrl, 'compactor_bench_replay_cache');
const queuePrefix = process.env.BENCH_QUEUE_PREFIX ?? '{compactor-bench-replay-cache}';

const usd = (value: number | null | undefined) => (value == null ? '–' : `$${value.toFixed(4)}`);
const ms = (value: number | null) => (value === null ? '–' : `${Math.round(value)} ms`);
const label = (run: RunReport) => run.variant.label.replace(/\.json$/, '');
/** Whether two runs sent the agent's model other prompts (the simulated cache saw other blocks). */
const sentOtherPrompts = (a: RunReport, b: RunReport) =>
  a.promptCache?.cacheReadTokens !== b.promptCache?.cacheReadTokens ||
  a.promptCache?.cacheWriteTokens !== b.promptCache?.cacheWriteTokens ||
  a.promptCache?.uncachedTokens !== b.promptCache?.uncachedTokens;
/** After-turn prunes cleared outputs: the pruning the two variants differ in (compactions prune alike). */
const pruned = (run: RunReport) => run.prunes.parts > 0;

try {
  const started = performance.now();
  const { report } = await runReplay(
    options,
    { env, out: { write: () => true } },
    { databaseUrl, recreate: true, queuePrefix },
  );
  console.log(
    `replayed ${report.runs.length} runs in ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
  );
  const header = [
    'session',
    'variant',
    'calls',
    'read',
    'written',
    'output',
    'agent',
    'no cache',
    'summarizer',
    'total',
    'prunes run/waited',
    'triggers',
    'wait total',
    'p50',
    'p95',
  ];
  const rows = report.runs.map((run) => {
    const cache = run.promptCache;
    const waits = waitStats(run.triggerWaits ?? []);
    return [
      run.transcript.replace(/\.jsonl$/, ''),
      label(run),
      String(cache?.calls ?? '–'),
      String(cache?.cacheReadTokens ?? '–'),
      String(cache?.cacheWriteTokens ?? '–'),
      String(cache?.outputTokens ?? '–'),
      usd(cache?.totalUsd),
      usd(cache?.noCacheUsd),
      usd(runTotals(run).costUsd),
      usd(totalCostUsd(run)),
      `${run.prunes.jobs}/${run.prunesSkipped ?? 0} (${run.prunes.parts} parts)`,
      String(waits.count),
      ms(waits.count ? waits.totalMs : null),
      ms(waits.p50Ms),
      ms(waits.p95Ms),
    ];
  });
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  for (const run of report.runs.filter((r) => r.error))
    console.log(`  ${run.transcript} · ${label(run)}: ${run.error}`);

  console.log('\ngoals per session');
  const goalWaitMs = SUMMARIZER_LATENCY_MS * 0.1;
  const tally = {
    cost: { pass: 0, fail: 0 },
    wait: { pass: 0, fail: 0 },
    dearer: 0,
    differ: { pass: 0, fail: 0 },
  };
  for (const transcript of new Set(report.runs.map((r) => r.transcript))) {
    const runs = new Map(report.runs.filter((r) => r.transcript === transcript).map((r) => [label(r), r]));
    const plain = runs.get('opencode-pruning')!;
    const aware = runs.get('cache-aware')!;
    const prepared = runs.get('cache-aware-prepared')!;
    const name = transcript.replace(/\.jsonl$/, '');
    let cost = 'no prune (OpenCode-style after-turn pruning cleared nothing)';
    if (pruned(plain)) {
      const [a, p] = [totalCostUsd(aware), totalCostUsd(plain)];
      const ok = a !== null && p !== null && a < p;
      tally.cost[ok ? 'pass' : 'fail']++;
      if (a === null || p === null || a > p) tally.dearer++;
      // The cost is the prompts' (and the summaries'): where the two sent the same prompts, the
      // prunes cache-aware let wait would have cleared nothing, and it cannot cost less.
      const differ = sentOtherPrompts(aware, plain);
      if (differ) tally.differ[ok ? 'pass' : 'fail']++;
      cost =
        `${ok ? 'PASS' : 'FAIL'} cache-aware ${usd(a)} vs OpenCode-style ${usd(p)} ` +
        `(${aware.prunesSkipped ?? 0} prunes waited; ${differ ? 'other prompts' : 'the same prompts'})`;
    }
    const before = waitStats(aware.triggerWaits ?? []);
    const after = waitStats(prepared.triggerWaits ?? []);
    let wait = 'no trigger crossed';
    if (after.count > 0) {
      const ok = after.p50Ms! < goalWaitMs;
      tally.wait[ok ? 'pass' : 'fail']++;
      wait = `${ok ? 'PASS' : 'FAIL'} prepared median ${ms(after.p50Ms)} (not prepared ${ms(before.p50Ms)}; goal < ${ms(goalWaitMs)})`;
    }
    console.log(`  ${name}\n    cost: ${cost}\n    wait: ${wait}`);
  }
  const all = (variant: string) =>
    waitStats(report.runs.filter((r) => label(r) === variant).flatMap((r) => r.triggerWaits ?? []));
  console.log(
    `\ncache-aware cheaper on ${tally.cost.pass} of ${tally.cost.pass + tally.cost.fail} sessions that prune; ` +
      `prepared median wait under ${ms(goalWaitMs)} on ${tally.wait.pass} of ${tally.wait.pass + tally.wait.fail} sessions that cross a trigger`,
  );
  console.log(
    `cache-aware dearer than OpenCode-style on ${tally.dearer} of ${tally.cost.pass + tally.cost.fail} sessions that prune; ` +
      `cheaper on ${tally.differ.pass} of the ${tally.differ.pass + tally.differ.fail} where the two sent other prompts`,
  );
  const pooled = all('cache-aware-prepared');
  console.log(
    `prepared: the agent's median wait at a trigger, over every session's ${pooled.count} waits: ${ms(pooled.p50Ms)} ` +
      `(${pooled.p50Ms !== null && pooled.p50Ms < goalWaitMs ? 'PASS' : 'FAIL'}, goal < ${ms(goalWaitMs)}); ` +
      `not prepared: ${ms(all('cache-aware').p50Ms)}`,
  );
  for (const variant of Object.keys(VARIANTS)) {
    const s = all(variant);
    console.log(
      `  ${variant}: ${s.count} trigger waits, total ${ms(s.count ? s.totalMs : null)}, p50 ${ms(s.p50Ms)}, p95 ${ms(s.p95Ms)}`,
    );
  }
} finally {
  if (KEEP_DATABASE) console.log(`kept ${databaseUrl} and ${dir}`);
  else {
    await dropDatabase(databaseUrl).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}
