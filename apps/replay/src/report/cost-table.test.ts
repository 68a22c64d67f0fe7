import { describe, expect, it } from 'vitest';
import { sampleReport } from '../test-support/report-fixture';
import { costRows, renderCostTable, totalCostUsd } from './cost-table';
import { renderHtml } from './html';
import type { ReplayReport } from './model';

function pricedReport(): ReplayReport {
  const report = sampleReport();
  const [first, second] = report.runs;
  first!.promptCache = {
    model: 'claude-sonnet-4-5',
    calls: 3,
    ttlFrom: 'consecutive',
    promptTokens: 850,
    uncachedTokens: 0,
    cacheReadTokens: 400,
    cacheWriteTokens: 450,
    outputTokens: 35,
    uncachedUsd: 0,
    cacheReadUsd: 0.00012,
    cacheWriteUsd: 0.0016875,
    outputUsd: 0.000525,
    totalUsd: 0.0023325,
    noCacheUsd: 0.003075,
  };
  first!.compactions[0]!.llm!.costUsd = 0.0101;
  first!.triggerWaits = [
    { turn: 4, compactionId: 'c1', waitMs: 2_100 },
    { turn: 9, compactionId: 'c2', waitMs: 40 },
    { turn: 12, compactionId: 'c3', waitMs: null },
  ];
  second!.promptCache = null;
  second!.triggerWaits = [];
  return report;
}

describe('the prompt-cache table', () => {
  it('shows each run’s cost through the cache, the summarizer’s, and its trigger waits', () => {
    const report = pricedReport();
    const rows = costRows(report);
    expect(rows[0]!.slice(2)).toEqual([
      '3',
      '0',
      '400',
      '450',
      '35',
      '$0.0023',
      '$0.0031',
      '$0.01',
      '2',
      '2.1 s',
      '40 ms',
      '2.1 s',
    ]);
    expect(rows[1]!.slice(2)).toEqual(['–', '–', '–', '–', '–', '–', '–', '–', '0', '–', '–', '–']);
    // Agent and summarizer together; nothing when the agent's calls were not priced.
    expect(totalCostUsd(report.runs[0]!)).toBe(0.0124325);
    expect(totalCostUsd(report.runs[1]!)).toBeNull();
    expect(renderCostTable(report)).toContain('as claude-sonnet-4-5 through the prompt cache');
    expect(renderHtml(report)).toContain("<h2>Prompt cache and the agent's wait</h2>");
  });

  it('is left out when no run priced its prompts nor crossed a trigger', () => {
    expect(renderCostTable(sampleReport())).toBe('');
    expect(renderHtml(sampleReport())).not.toContain('Prompt cache');
  });
});
