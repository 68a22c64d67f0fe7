/**
 * `report.html`: one self-contained page (inline CSS and SVG, no script, no network). Per
 * transcript: a chart of context tokens over turns with compaction markers (one line per variant),
 * the side-by-side comparison when several variants ran, and per variant its compactions and the
 * retention table (what the context still knew after each compaction, and what it lost).
 */
import { renderChart, type ChartSeries } from './chart';
import { escapeHtml as e } from './escape';
import { allKept, allReachable, int, kilo, ms, presenceCell, ratio, usd } from './format';
import {
  runsByTranscript,
  runTotals,
  type CompactionRecord,
  type Presence,
  type ReplayReport,
  type RunReport,
} from './model';
import { SUMMARY_COLUMNS, tableRows } from './table';
import { COST_COLUMNS, costRows } from './cost-table';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563', '#ca8a04'];

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1180px;color:#111;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin-top:20px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f5}td.l,th.l{text-align:left}.ok{color:#15803d}.lost{color:#b91c1c;font-weight:600}.muted{color:#666}
svg.chart{width:100%;max-width:760px;height:auto;border:1px solid #eee;background:#fff}
svg .grid{stroke:#eee}svg .axis{font-size:10px;fill:#666}svg .usable{stroke:#b91c1c;stroke-dasharray:4 3}
svg .line{fill:none;stroke-width:1.6}svg .legend{font-size:11px}svg .marker-failed,svg .marker-skipped{opacity:.45}
code{background:#f4f4f5;padding:0 3px;border-radius:3px}`;

function table(
  headers: readonly string[],
  rows: readonly string[][],
  leftColumns = 2,
  className = '',
): string {
  const th = headers.map((h, i) => `<th${i < leftColumns ? ' class="l"' : ''}>${e(h)}</th>`).join('');
  // Cells arrive escaped: some carry markup (kept / lost marks).
  const body = rows
    .map((r) => `<tr>${r.map((c, i) => `<td${i < leftColumns ? ' class="l"' : ''}>${c}</td>`).join('')}</tr>`)
    .join('');
  return `<table${className ? ` class="${className}"` : ''}><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`;
}

const mark = (kept: boolean, text = kept ? 'kept' : 'LOST') =>
  `<span class="${kept ? 'ok' : 'lost'}">${e(text)}</span>`;
const scoreCell = (score: { kept: number; total: number }) =>
  score.total === 0 ? '<span class="muted">–</span>' : mark(allKept(score), ratio(score));
const presenceHtml = (p: Presence) =>
  p.total === 0 ? '<span class="muted">–</span>' : mark(allReachable(p), presenceCell(p));

function compactionRows(run: RunReport): string[][] {
  return run.compactions.map((c) => [
    e(String(c.triggeredAtTurn)),
    e(c.reason),
    c.outcome === 'summarized' || c.outcome === 'truncated' ? e(c.outcome) : mark(false, c.outcome),
    e(`${int(c.tokensBefore)} → ${int(c.tokensAfter)}`),
    e(`${c.prunedParts} / ${int(c.prunedTokens)}`),
    e(c.llm ? `${c.llm.model}: ${int(c.llm.input)} in, ${int(c.llm.output)} out` : '–'),
    e(usd(c.llm?.costUsd)),
    e(ms(c.latencyMs)),
    e(ms(c.waitedMs)),
    c.context
      ? mark(c.context.valid, c.context.valid ? 'valid' : c.context.issues.map((i) => i.kind).join(', '))
      : '–',
    c.context
      ? c.followedBy
        ? e(`${int(c.context.tokens)} / ${int(c.context.usable)}, outrun: followed by another`)
        : mark(c.context.withinWindow, `${int(c.context.tokens)} / ${int(c.context.usable)}`)
      : '–',
    e(c.error ? `${c.error.code}: ${c.error.message}` : ''),
  ]);
}

const WHERE_TEXT = { verbatim: 'verbatim', paraphrased: 'paraphrased in summary' } as const;
const NAMED_TEXT = {
  verbatim: 'named',
  group: 'named in its group',
  directory: 'named by its directory',
} as const;

function retentionRows(c: CompactionRecord): string[][] {
  const r = c.retention;
  if (!r) return [];
  const rows: string[][] = [];
  // A paraphrase keeps the sense, not the text: shown, but not marked as kept.
  const where = (w: 'verbatim' | 'paraphrased' | null) =>
    w === 'verbatim' ? mark(true, WHERE_TEXT[w]) : w === 'paraphrased' ? e(WHERE_TEXT[w]) : mark(false);
  if (r.goal) rows.push(['goal', e(r.goal.text), where(r.goal.where)]);
  for (const constraint of r.constraints)
    rows.push(['constraint', e(constraint.text), where(constraint.where)]);
  for (const fact of r.facts ?? []) rows.push(['stated fact', e(fact.text), where(fact.where)]);
  for (const file of r.files)
    rows.push([
      `file (${file.kind})`,
      `<code>${e(file.path)}</code>`,
      file.named === null ? mark(false) : mark(true, NAMED_TEXT[file.named]),
    ]);
  if (r.latestRequest) {
    const text =
      r.latestRequest.text.length > 240 ? `${r.latestRequest.text.slice(0, 239)}…` : r.latestRequest.text;
    rows.push(['latest request', e(text), where(r.latestRequest.where)]);
  }
  for (const fact of c.recall?.facts ?? [])
    rows.push([
      `recall (${fact.kind})`,
      fact.kind === 'file' ? `<code>${e(fact.text)}</code>` : e(fact.text),
      mark(
        fact.found,
        fact.found ? `recoverable (${fact.via === 'listing' ? 'listing' : 'search'})` : 'not returned',
      ),
    ]);
  return rows;
}

function comparison(runs: readonly RunReport[]): string {
  const rows = runs.map((run) => {
    const t = runTotals(run);
    return [
      e(run.variant.label),
      e(String(t.compactions)),
      e(kilo(t.peakTokens)),
      e(kilo(t.finalTokens)),
      e(kilo(t.tokensSaved)),
      e(t.llmInput + t.llmOutput === 0 ? '–' : `${kilo(t.llmInput)}/${kilo(t.llmOutput)}`),
      e(usd(t.costUsd)),
      e(ms(t.latencyMedianMs)),
      scoreCell(t.validContexts),
      scoreCell(t.withinWindow),
      presenceHtml(t.files),
      presenceHtml(t.goal),
      presenceHtml(t.constraints),
      presenceHtml(t.facts),
      presenceHtml(t.latestRequest),
      t.paraphrased.total === 0 ? '<span class="muted">–</span>' : e(ratio(t.paraphrased)),
    ];
  });
  const headers = [
    'variant',
    'compactions',
    'peak',
    'final',
    'saved',
    'llm in/out',
    'cost',
    'latency p50',
    'valid',
    'in window',
    'files',
    'goal',
    'constraints',
    'facts',
    'latest',
    'paraphrased',
  ];
  return table(headers, rows, 1, 'comparison');
}

function transcriptSection(name: string, runs: readonly RunReport[], index: number): string {
  const usable = Math.max(...runs.map((r) => r.usable));
  const series: ChartSeries[] = runs.map((run, i) => ({
    label: run.variant.label,
    color: COLORS[i % COLORS.length]!,
    points: run.points.map((p) => ({ turn: p.turn, tokens: p.tokens })),
    markers: run.compactions.map((c) => ({
      turn: Math.max(1, c.endedAtTurn),
      tokens: run.points[Math.max(0, c.endedAtTurn - 1)]?.tokens ?? 0,
      outcome: c.outcome,
      title: `${c.reason} compaction, ${c.outcome}: ${int(c.tokensBefore)} → ${int(c.tokensAfter)} tokens`,
    })),
  }));
  const first = runs[0]!;
  const parts = [
    `<section class="transcript" id="t${index}">`,
    `<h2>${e(name)}</h2>`,
    `<p class="muted">${e(first.format)} · ${first.messages} messages · ${e(first.file)} · window ${int(first.window)}, usable ${int(usable)}</p>`,
    renderChart(series, usable, `context tokens over turns: ${name}`),
    runs.length > 1 ? `<h3>Side by side</h3>${comparison(runs)}` : '',
  ];
  for (const run of runs) {
    parts.push(
      `<h3>${e(run.variant.label)} <span class="muted">(session ${e(run.sessionId)}, ${ms(run.durationMs)}, waited ${ms(run.waitMs)} for compactions)</span></h3>`,
    );
    if (run.error) parts.push(`<p class="lost">run failed: ${e(run.error)}</p>`);
    if (run.compactions.length === 0) {
      parts.push(
        '<p class="muted">No compaction: the session never crossed the policy’s trigger at this window.</p>',
      );
      continue;
    }
    parts.push(
      table(
        [
          'turn',
          'reason',
          'outcome',
          'tokens before → after',
          'pruned parts / tokens',
          'LLM',
          'cost',
          'latency',
          'agent waited',
          'context',
          'tokens / usable',
          'error',
        ],
        compactionRows(run),
        0,
      ),
    );
    run.compactions.forEach((c, i) => {
      const rows = retentionRows(c);
      if (rows.length > 0)
        parts.push(
          `<h4>Retention after compaction ${i + 1} (turn ${c.endedAtTurn})</h4>`,
          table(['probe', 'what', 'result'], rows, 2, 'retention'),
        );
    });
  }
  parts.push('</section>');
  return parts.join('\n');
}

/** The agent's cost through the prompt cache and its trigger waits, when the run measured them. */
function costSection(report: ReplayReport): string {
  if (!report.runs.some((r) => r.promptCache || (r.triggerWaits?.length ?? 0) > 0)) return '';
  const rows = costRows(report).map((row) => row.map((cell) => e(cell)));
  return `<h2>Prompt cache and the agent's wait</h2>${table(COST_COLUMNS, rows, 2, 'summary')}
<p class="muted">agent cost: its model calls through the prompt cache of ${e(report.runs.find((r) => r.promptCache)?.promptCache?.model ?? 'no priced model')}; no cache: the same calls at the input price; summarizer: the compactions' LLM cost; wait: from the append that crossed the trigger until its compaction ended.</p>`;
}

export function renderHtml(report: ReplayReport): string {
  const summaryRows = tableRows(report).map((row) => row.map((cell) => e(cell)));
  const groups = [...runsByTranscript(report)];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Compactor replay: ${report.runs.length} runs</title><style>${STYLE}</style></head>
<body>
<h1>Compactor replay</h1>
<p class="muted">${e(report.startedAt)} · ${report.target.kind} Compactor at ${e(report.target.url)} · LLM ${e(report.target.llm)} · window ${int(report.window)} · usage after compaction: ${e(report.usage)}</p>
${table(SUMMARY_COLUMNS, summaryRows, 2, 'summary')}
<p class="muted">peak/final: the API's estimate of the next prompt; saved: tokens removed by completed compactions; valid: contexts served after a compaction that a provider accepts; files, goal, constraints, facts, latest: present + recoverable / checked, per compaction (present: verbatim in the context served, whitespace collapsed, a file also in its ledger group; recoverable: not present, but recall returns it verbatim); goal, constraints, stated facts (identifiers, versions, quantities, URLs) and latest request are the user&#39;s own words, without harness text; paraphrased: goals and constraints the summary holds only in other words (not verbatim, not counted present).</p>
${costSection(report)}
${groups.map(([name, runs], i) => transcriptSection(name, runs, i)).join('\n')}
</body></html>
`;
}
