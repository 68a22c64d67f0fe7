/**
 * The second table of a replay run with `--model`: per run, what the agent's own model calls cost
 * through the prompt cache (uncached, read and written prompt tokens, output), what the
 * summarizer cost beside them, and the agent's wait at each trigger crossing.
 */
import { waitStats } from '../runner/trigger-waits';
import { kilo, ms, usd } from './format';
import { runTotals, type ReplayReport, type RunReport } from './model';

export const COST_COLUMNS = [
  'session',
  'variant',
  'calls',
  'uncached',
  'cache read',
  'written',
  'output',
  'agent cost',
  'no cache',
  'summarizer',
  'triggers',
  'wait total',
  'wait p50',
  'wait p95',
] as const;

/** The agent's cost and the summarizer's, `null` when either has no price. */
export function totalCostUsd(run: RunReport): number | null {
  const agent = run.promptCache?.totalUsd ?? null;
  if (agent === null) return null;
  const summarizer = runTotals(run).costUsd ?? 0;
  return Math.round((agent + summarizer) * 1e8) / 1e8;
}

export function costRows(report: ReplayReport): string[][] {
  return report.runs.map((run) => {
    const cache = run.promptCache ?? null;
    const waits = waitStats(run.triggerWaits ?? []);
    return [
      run.transcript.length <= 28 ? run.transcript : `${run.transcript.slice(0, 27)}…`,
      run.variant.label.length <= 26 ? run.variant.label : `${run.variant.label.slice(0, 25)}…`,
      String(cache?.calls ?? '–'),
      kilo(cache?.uncachedTokens),
      kilo(cache?.cacheReadTokens),
      kilo(cache?.cacheWriteTokens),
      kilo(cache?.outputTokens),
      usd(cache?.totalUsd),
      usd(cache?.noCacheUsd),
      usd(runTotals(run).costUsd),
      String(waits.count),
      ms(waits.count ? waits.totalMs : null),
      ms(waits.p50Ms),
      ms(waits.p95Ms),
    ];
  });
}

/** The table as aligned text, or `''` when no run priced its prompts nor crossed a trigger. */
export function renderCostTable(report: ReplayReport): string {
  if (!report.runs.some((r) => r.promptCache || (r.triggerWaits?.length ?? 0) > 0)) return '';
  const rows = [[...COST_COLUMNS], ...costRows(report)];
  const widths = COST_COLUMNS.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const model = report.runs.find((r) => r.promptCache)?.promptCache;
  const ttl = model
    ? model.ttlFrom === 'timestamps'
      ? "the cache's TTL checked against the transcript's timestamps"
      : 'no timestamps: consecutive calls taken as within the TTL'
    : 'prompts not priced (no --model)';
  return [
    line(rows[0]!),
    widths.map((w) => '─'.repeat(w)).join('  '),
    ...rows.slice(1).map(line),
    `agent cost: its model calls${model ? ` as ${model.model}` : ''} through the prompt cache (${ttl}) · no cache: the same`,
    'calls at the input price · summarizer: the compactions’ LLM cost · wait: from the append that crossed the trigger',
    'until its compaction ended (p50/p95 by nearest rank)',
  ].join('\n');
}
