import { describe, expect, it } from 'vitest';
import type { CompactionRecord } from '../report/model';
import { quantile, triggerWaits, waitStats } from './trigger-waits';

const record = (id: string, followedBy: string | null = null) => ({ id, followedBy }) as CompactionRecord;

describe('triggerWaits', () => {
  it('measures from the answer to the end of the compaction and of the follow-ups chained to it', () => {
    const ended: Record<string, number> = { c1: 1_500, c2: 4_000, c3: 9_000, c4: 10_050 };
    const waits = triggerWaits(
      [
        { turn: 3, compactionId: 'c1', answeredAt: 1_000 },
        // c2 was first seen in an answer while c1 ran, but it is c1's follow-up: part of c1's wait.
        { turn: 4, compactionId: 'c2', answeredAt: 1_200 },
        { turn: 9, compactionId: 'c3', answeredAt: 8_000 },
        // Ended before the run saw the answer: no wait.
        { turn: 12, compactionId: 'c4', answeredAt: 10_100 },
        { turn: 15, compactionId: 'c5', answeredAt: 12_000, endedAtAnswer: true },
        // Never ended within the run.
        { turn: 20, compactionId: 'c6', answeredAt: 20_000 },
      ],
      [record('c1', 'c2'), record('c2'), record('c3'), record('c4'), record('c5'), record('c6')],
      (id) => ended[id],
    );
    expect(waits).toEqual([
      { turn: 3, compactionId: 'c1', waitMs: 3_000 },
      { turn: 9, compactionId: 'c3', waitMs: 1_000 },
      { turn: 12, compactionId: 'c4', waitMs: 0 },
      { turn: 15, compactionId: 'c5', waitMs: 0 },
      { turn: 20, compactionId: 'c6', waitMs: null },
    ]);
  });
});

describe('waitStats', () => {
  it.each([
    [[], { count: 0, totalMs: 0, p50Ms: null, p95Ms: null }],
    [[40], { count: 1, totalMs: 40, p50Ms: 40, p95Ms: 40 }],
    [[30, 10, 20, 40], { count: 4, totalMs: 100, p50Ms: 20, p95Ms: 40 }],
    [[5, null, 15, 10], { count: 3, totalMs: 30, p50Ms: 10, p95Ms: 15 }],
  ])('%j → %j', (ms, stats) => {
    expect(waitStats(ms.map((waitMs, i) => ({ turn: i, compactionId: `c${i}`, waitMs })))).toEqual(stats);
  });

  it('takes quantiles by nearest rank', () => {
    const values = Array.from({ length: 20 }, (_, i) => (i + 1) * 10);
    expect(quantile(values, 0.5)).toBe(100);
    expect(quantile(values, 0.95)).toBe(190);
    expect(quantile(values, 1)).toBe(200);
  });
});
