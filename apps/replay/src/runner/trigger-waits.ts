/**
 * The agent's wait at each trigger crossing: from the answer of the append after which a
 * compaction started until that compaction, and the follow-ups the worker chained to it, ended
 * (the context fits again), and the figures the report shows of them.
 */
import type { CompactionRecord, TriggerWait } from '../report/model';

/** An append whose answer named a compaction the run had not seen. */
export interface TriggerCrossing {
  turn: number;
  compactionId: string;
  /** When the append's answer arrived (ms since the epoch). */
  answeredAt: number;
  /** The answer already said it ended (nothing to wait for). */
  endedAtAnswer?: boolean;
}

/**
 * One wait per crossing. A crossing whose compaction is another's follow-up is part of that one's
 * wait, not a crossing of its own. `endedAt`: when the run saw a compaction end.
 */
export function triggerWaits(
  crossings: readonly TriggerCrossing[],
  compactions: readonly CompactionRecord[],
  endedAt: (id: string) => number | undefined,
): TriggerWait[] {
  const followUps = new Set(compactions.flatMap((c) => (c.followedBy ? [c.followedBy] : [])));
  const next = new Map(compactions.map((c) => [c.id, c.followedBy ?? null]));
  return crossings
    .filter((crossing) => !followUps.has(crossing.compactionId))
    .map(({ turn, compactionId, answeredAt, endedAtAnswer }) => {
      if (endedAtAnswer && !next.get(compactionId)) return { turn, compactionId, waitMs: 0 };
      let last = compactionId;
      const seen = new Set([last]);
      for (let id = next.get(last); id && !seen.has(id); id = next.get(id)) {
        seen.add(id);
        last = id;
      }
      const ended = endedAt(last);
      return { turn, compactionId, waitMs: ended === undefined ? null : Math.max(0, ended - answeredAt) };
    });
}

export interface WaitStats {
  count: number;
  totalMs: number;
  p50Ms: number | null;
  p95Ms: number | null;
}

/** The `p` quantile by nearest rank (the smallest value with at least `p` of them at or below it). */
export function quantile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
}

/** Total, median and p95 of the waits that ended. */
export function waitStats(waits: readonly TriggerWait[]): WaitStats {
  const ms = waits.flatMap((w) => (w.waitMs === null ? [] : [w.waitMs]));
  return {
    count: ms.length,
    totalMs: ms.reduce((a, b) => a + b, 0),
    p50Ms: quantile(ms, 0.5),
    p95Ms: quantile(ms, 0.95),
  };
}
