/**
 * The summary table printed at the end of a replay: one row per run (transcript × variant), the
 * compaction figures and the retention scores, kept / checked.
 */
import { kilo, ms, presenceCell, ratio, tasksCell, usd } from './format';
import { runTotals, type ReplayReport } from './model';

/** The summary's columns, in the terminal table and in report.html. */
export const SUMMARY_COLUMNS = [
  'session',
  'variant',
  'msgs',
  'compactions',
  'peak',
  'final',
  'saved',
  'pruned',
  'llm in/out',
  'cost',
  'latency p50',
  'valid',
  'files',
  'goal',
  'constr.',
  'facts',
  'latest',
  'tasks',
  'para.',
  'cache inv.',
] as const;

function cut(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** The rows as text cells (also what the tests read). */
export function tableRows(report: ReplayReport): string[][] {
  return report.runs.map((run) => {
    const t = runTotals(run);
    const outcomes = Object.entries(t.byOutcome)
      .filter(([, n]) => n > 0)
      .map(([outcome, n]) => `${n} ${outcome}`)
      .join(', ');
    return [
      cut(run.transcript, 28),
      cut(run.variant.label, 22),
      String(run.messages),
      run.status === 'failed' ? 'run failed' : outcomes || 'none',
      kilo(t.peakTokens),
      kilo(t.finalTokens),
      kilo(t.tokensSaved),
      kilo(t.prunedTokens),
      t.llmInput + t.llmOutput === 0 ? '–' : `${kilo(t.llmInput)}/${kilo(t.llmOutput)}`,
      usd(t.costUsd),
      ms(t.latencyMedianMs),
      ratio(t.validContexts),
      presenceCell(t.files),
      presenceCell(t.goal),
      presenceCell(t.constraints),
      presenceCell(t.facts),
      presenceCell(t.latestRequest),
      tasksCell(t.tasks),
      ratio(t.paraphrased),
      kilo(t.cacheInvalidatedTokens),
    ];
  });
}

/** The table as aligned text, with a header rule; failed runs' errors listed under it. */
export function renderTable(report: ReplayReport): string {
  const rows = [[...SUMMARY_COLUMNS], ...tableRows(report)];
  const widths = SUMMARY_COLUMNS.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i < 2 || i === 3 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ');
  const out = [line(rows[0]!), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.slice(1).map(line)];
  for (const run of report.runs.filter((r) => r.error))
    out.push(`  ${run.transcript} · ${run.variant.label}: ${run.error}`);
  out.push(
    'valid: contexts after a compaction a provider accepts (every tool call answered) · files, goal, constr., facts, latest:',
    'present + recoverable / checked, per compaction: present = verbatim in the context served (a file also in its ledger',
    'group or under a directory the ledger names for files it had no room for), recoverable = not present but recall',
    '(GET …/recall?kind= or ?q=) returns it verbatim; goal, constraints,',
    "facts (identifiers, versions, quantities, URLs) and latest request in the user's own words (no harness text) ·",
    'tasks: running sub-agents/background tasks the compactions covered, named in the context + delivered late / running',
    '(lost: in neither) · para.: goals and constraints only paraphrased in the',
    'summary (not verbatim) · cache inv.: cached prompt tokens the compactions invalidated (as the API records it)',
  );
  return out.join('\n');
}
