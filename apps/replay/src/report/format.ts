/** Number and score formatting shared by the terminal table and the HTML report. */
import type { TasksProbe } from '../probes/tasks';
import type { Presence, Score } from './model';

export const int = (value: number | null | undefined) =>
  value == null ? '–' : Math.round(value).toLocaleString('en-US');

export const kilo = (value: number | null | undefined) =>
  value == null
    ? '–'
    : value >= 10_000
      ? `${Math.round(value / 1000)}k`
      : value >= 1000
        ? `${(value / 1000).toFixed(1)}k`
        : String(value);

export const ms = (value: number | null | undefined) =>
  value == null ? '–' : value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;

export const usd = (value: number | null | undefined) =>
  value == null ? '–' : `$${value.toFixed(value < 0.01 ? 4 : 2)}`;

/** `3/4`, or `–` when there was nothing to check. */
export const ratio = (score: Score) => (score.total === 0 ? '–' : `${score.kept}/${score.total}`);

export const allKept = (score: Score) => score.kept === score.total;

/** `5+2/9`: present in the context + recoverable through recall / checked (`–`: nothing to check). */
export const presenceCell = (p: Presence) =>
  p.total === 0 ? '–' : `${p.present}+${p.recoverable}/${p.total}`;

/** Whether every item was present or recoverable. */
export const allReachable = (p: Presence) => p.present + p.recoverable === p.total;

/**
 * `3+1/4`: running tasks the compactions covered that the context still names (the tasks block)
 * + those delivered late (a task notification) / all that were running; `, 2 lost` when any was
 * in neither (must never happen); `–` when no compaction covered a running task.
 */
export const tasksCell = (t: TasksProbe) => {
  const running = t.compacted - t.finished;
  if (running === 0) return '–';
  return `${t.alive}+${t.deliveredLate}/${running}${t.lost > 0 ? `, ${t.lost} lost` : ''}`;
};
