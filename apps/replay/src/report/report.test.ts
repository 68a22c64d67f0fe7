import { describe, expect, it } from 'vitest';
import { sampleReport } from '../test-support/report-fixture';
import { renderHtml } from './html';
import { runTotals } from './model';
import { kilo } from './format';
import { renderTable, SUMMARY_COLUMNS, tableRows } from './table';

describe('runTotals', () => {
  it('adds up compactions and scores every probe of every compaction', () => {
    const [faithful, lossy] = sampleReport().runs;
    expect(runTotals(faithful!)).toMatchObject({
      compactions: 1,
      tokensSaved: 8_000,
      prunedTokens: 3_000,
      llmInput: 2_900,
      costUsd: null,
      validContexts: { kept: 1, total: 1 },
      constraints: { present: 2, recoverable: 0, total: 2 },
      // One named verbatim, one only in its ledger group: both named.
      files: { present: 2, recoverable: 0, total: 2 },
      // The summary restates the goal: not verbatim, not present.
      goal: { present: 0, recoverable: 0, total: 1 },
      paraphrased: { kept: 1, total: 3 },
    });
    const totals = runTotals(lossy!);
    expect(totals.byOutcome).toMatchObject({ summarized: 1, failed: 1 });
    expect(totals.constraints).toEqual({ present: 1, recoverable: 1, total: 2 });
    // A file only recall returns is recoverable, not present.
    expect(totals.files).toEqual({ present: 0, recoverable: 1, total: 1 });
    expect(totals.goal).toEqual({ present: 0, recoverable: 0, total: 1 });
    // A fact no longer there and not looked up (nothing found): neither present nor recoverable.
    expect(totals.facts).toEqual({ present: 0, recoverable: 0, total: 1 });
    expect(runTotals(faithful!).facts).toEqual({ present: 1, recoverable: 0, total: 1 });
    expect(totals.peakTokens).toBe(1_000 + 7 * 1_600);
  });

  it('scores the window on the contexts an agent sends: one a follow-up replaced was never sent', () => {
    const [faithful] = sampleReport().runs;
    const first = faithful!.compactions[0]!;
    const outrun = { ...first, id: 'cmp_outrun', followedBy: first.id };
    const over = { ...outrun, context: { ...first.context!, tokens: 15_000, withinWindow: false } };
    const run = { ...faithful!, compactions: [over, first] };
    expect(runTotals(run).withinWindow).toEqual({ kept: 1, total: 1 });
    expect(runTotals({ ...run, compactions: [{ ...over, followedBy: null }, first] }).withinWindow).toEqual({
      kept: 1,
      total: 2,
    });
    // Pinned system messages larger than the window: the one case no compaction fits, not counted.
    const pinned = { ...over, followedBy: null, context: { ...over.context!, cannotFit: true } };
    expect(runTotals({ ...run, compactions: [pinned, first] }).withinWindow).toEqual({ kept: 1, total: 1 });
  });
});

describe('the terminal table', () => {
  it('has one row per run with the retention scores', () => {
    const rows = tableRows(sampleReport());
    const at = (name: (typeof SUMMARY_COLUMNS)[number]) => SUMMARY_COLUMNS.indexOf(name);
    expect(rows.map((r) => [r[1], r[3], r[at('files')], r[at('constr.')], r[at('para.')]])).toEqual([
      ['opencode', '1 summarized', '2+0/2', '2+0/2', '1/3'],
      ['opal', '1 summarized, 1 failed', '0+1/1', '1+1/2', '1/3'],
    ]);
    expect(renderTable(sampleReport()).split('\n')[0]).toMatch(/^session\s+variant\s+msgs\s+compactions/);
  });

  it('shows the running tasks each compaction covered: named, delivered late, lost', () => {
    const report = sampleReport();
    const [faithful, lossy] = report.runs;
    const first = faithful!.compactions[0]!;
    faithful!.compactions = [
      { ...first, tasks: { compacted: 5, alive: 3, deliveredLate: 1, finished: 1, lost: 0 } },
      {
        ...first,
        id: 'cmp_second',
        tasks: { compacted: 2, alive: 2, deliveredLate: 0, finished: 0, lost: 0 },
      },
    ];
    lossy!.compactions = [
      {
        ...lossy!.compactions[0]!,
        tasks: { compacted: 3, alive: 1, deliveredLate: 0, finished: 0, lost: 2 },
      },
    ];
    expect(runTotals(faithful!).tasks).toEqual({
      compacted: 7,
      alive: 5,
      deliveredLate: 1,
      finished: 1,
      lost: 0,
    });
    const column = SUMMARY_COLUMNS.indexOf('tasks');
    expect(tableRows(report).map((r) => r[column])).toEqual(['5+1/6', '1+0/3, 2 lost']);
    // Older reports (no tasks probe) and runs without running tasks show nothing to check.
    expect(tableRows(sampleReport()).map((r) => r[column])).toEqual(['–', '–']);
  });

  it("sums the cached prompt tokens each run's compactions invalidated; older reports have none", () => {
    const report = sampleReport();
    const [faithful] = report.runs;
    const cache = (invalidatedTokens: number) => ({
      invalidatedTokens,
      rewriteCostUsd: null,
      savingPerTurnUsd: null,
      breakEvenTurns: null,
    });
    const first = faithful!.compactions[0]!;
    faithful!.compactions = [
      { ...first, cache: cache(12_500) },
      { ...first, id: 'cmp_second', cache: cache(6_450) },
      { ...first, id: 'cmp_failed', cache: null },
    ];
    expect(runTotals(faithful!).cacheInvalidatedTokens).toBe(18_950);
    const column = SUMMARY_COLUMNS.indexOf('cache inv.');
    expect(tableRows(report).map((r) => r[column])).toEqual([kilo(18_950), kilo(0)]);
  });
});

describe('report.html', () => {
  const html = renderHtml(sampleReport());

  it('is self-contained: no script, no external resource', () => {
    expect(html).not.toMatch(/<script|<link|src=|href="http|@import|url\(/i);
  });

  it('escapes transcript text', () => {
    expect(html).toContain('Invoice totals are off by one cent &lt;for EUR&gt;');
    expect(html).not.toContain('<for EUR>');
  });

  it('charts each variant with a point per turn and a marker per compaction, and compares them', () => {
    expect(html.match(/class="series"/g)).toHaveLength(2);
    expect(html.match(/<circle class="point"/g)).toHaveLength(24);
    expect(html.match(/class="marker /g)).toHaveLength(3);
    expect(html).toContain('<h3>Side by side</h3>');
  });

  it('marks what was lost', () => {
    const retention = html.slice(html.indexOf('<h3>opal'));
    expect(retention).toMatch(/Never use floating point for money\.<\/td><td><span class="lost">LOST/);
    expect(retention).toContain('context_cannot_fit: too big');
    expect(retention).toMatch(
      /recall \(constraint\)<\/td><td class="l">Never use floating point for money\.<\/td><td><span class="ok">recoverable \(search\)/,
    );
    expect(retention).toMatch(
      /recall \(file\)<\/td><td class="l"><code>src\/billing\/totals\.ts<\/code><\/td><td><span class="ok">recoverable \(listing\)/,
    );
    // A paraphrase is shown, never marked verbatim.
    expect(html).toMatch(
      /Invoice totals are off by one cent &lt;for EUR&gt;<\/td><td>paraphrased in summary/,
    );
    expect(html).toMatch(/rounding\.ts<\/code><\/td><td><span class="ok">named in its group/);
  });
});
