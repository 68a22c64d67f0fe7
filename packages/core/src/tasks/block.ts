/**
 * The "tasks" block: the session's running tasks and its recently finished ones, as structure the
 * served context carries after every compaction boundary (a summary's prose may lose a task; this
 * block is rendered from the registry, not from the summary).
 *
 * ```
 * <tasks>
 * Sub-agents and background tasks of this session (the authoritative list; results arrive as task notifications):
 * Running (2):
 * - [task call_1] Task, started 2026-12-07T10:00:00.000Z: description: Port the parser · prompt: …
 * - [task call_4] Task, started 2026-12-07T10:03:00.000Z: description: Port the parser · prompt: … (DUPLICATE of call_1: same tool and input)
 * Recently finished (1 of 3):
 * - [task call_0] Bash completed 2026-12-07T09:59:00.000Z: command: npm test → 41 passed
 * - (2 earlier finished tasks not listed)
 * </tasks>
 * ```
 *
 * Running tasks come first, oldest first (the block's head stays the same while they run, which
 * keeps the provider's prompt cache), then finished ones, newest first. Each task is named once,
 * by its `[task <callId>]` marker; text inside an item cannot open a marker or close the block.
 */
import { isFinishedStatus, type TaskRecord } from './record';

export const TASKS_OPEN = '<tasks>';
export const TASKS_CLOSE = '</tasks>';
const HEADER =
  'Sub-agents and background tasks of this session (the authoritative list; results arrive as task notifications):';

/** At most this many tasks are listed; the rest are counted. */
export const TASKS_BLOCK_MAX_TASKS = 500;
/** At most this many finished tasks are listed (the newest). */
export const TASKS_BLOCK_MAX_FINISHED = 20;

/** Bounds of a rendering. */
export interface TasksBlockOptions {
  maxTasks?: number;
  maxFinished?: number;
  /** Characters the block may take at most (entries past it are counted); default unbounded. */
  maxChars?: number;
}

/** A rendered block and what it left out. */
export interface TasksBlock {
  /** The block's text, or '' when there is no task. */
  text: string;
  /** The call ids it names, in order. */
  listed: string[];
  runningNotListed: number;
  finishedNotListed: number;
  /** Running call id → the older running call with the same tool and input. */
  duplicates: Map<string, string>;
}

/** The marker that names a task in the block. */
export function taskMarker(callId: string): string {
  return `[task ${callId}]`;
}

/** Item text on one line that cannot open a marker or open or close the block. */
function itemText(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/\[task /gi, '(task ')
    .replace(/<(\/?)tasks/gi, '‹$1tasks');
}

const byStarted = (a: TaskRecord, b: TaskRecord) =>
  a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.seq - b.seq;
const byFinishedDesc = (a: TaskRecord, b: TaskRecord) =>
  (b.finishedAt ?? '') < (a.finishedAt ?? '')
    ? -1
    : (b.finishedAt ?? '') > (a.finishedAt ?? '')
      ? 1
      : b.seq - a.seq;

/**
 * Running tasks that repeat an older running task's tool and input: call id → the older one's.
 * Two agents dispatched onto the same work is what a lost task leads to.
 */
export function duplicateRunningTasks(tasks: readonly TaskRecord[]): Map<string, string> {
  const first = new Map<string, string>();
  const duplicates = new Map<string, string>();
  for (const task of tasks.filter((t) => !isFinishedStatus(t.status)).sort(byStarted)) {
    const original = first.get(task.dedupeKey);
    if (original === undefined) first.set(task.dedupeKey, task.callId);
    else duplicates.set(task.callId, original);
  }
  return duplicates;
}

function runningLine(task: TaskRecord, duplicateOf: string | undefined): string {
  const duplicate = duplicateOf ? ` (DUPLICATE of ${duplicateOf}: same tool and input)` : '';
  return `- ${taskMarker(task.callId)} ${itemText(task.tool)}, ${task.status}, started ${task.startedAt}: ${itemText(task.asked)}${duplicate}`;
}

function finishedLine(task: TaskRecord): string {
  const outcome = task.outcome === null || task.outcome === '' ? '' : ` → ${itemText(task.outcome)}`;
  return `- ${taskMarker(task.callId)} ${itemText(task.tool)} ${task.status} ${task.finishedAt ?? ''}: ${itemText(task.asked)}${outcome}`;
}

/** The block for `tasks` (any order, any number), bounded by `options`. */
export function renderTasksBlock(tasks: readonly TaskRecord[], options: TasksBlockOptions = {}): TasksBlock {
  const maxTasks = options.maxTasks ?? TASKS_BLOCK_MAX_TASKS;
  const maxFinished = options.maxFinished ?? TASKS_BLOCK_MAX_FINISHED;
  const maxChars = options.maxChars ?? Infinity;
  const running = tasks.filter((t) => !isFinishedStatus(t.status)).sort(byStarted);
  const finished = tasks.filter((t) => isFinishedStatus(t.status)).sort(byFinishedDesc);
  const duplicates = duplicateRunningTasks(running);
  const empty = { text: '', listed: [], runningNotListed: 0, finishedNotListed: 0, duplicates };
  if (running.length === 0 && finished.length === 0) return empty;

  const listed: string[] = [];
  // Room for the frame and the two count lines, which are always written.
  let room = maxChars - (HEADER.length + TASKS_OPEN.length + TASKS_CLOSE.length + 200);
  const take = (line: string, callId: string, lines: string[]) => {
    if (listed.length >= maxTasks || line.length + 1 > room) return false;
    room -= line.length + 1;
    lines.push(line);
    listed.push(callId);
    return true;
  };
  const runningLines: string[] = [];
  for (const task of running)
    if (!take(runningLine(task, duplicates.get(task.callId)), task.callId, runningLines)) break;
  const finishedLines: string[] = [];
  for (const task of finished.slice(0, maxFinished))
    if (!take(finishedLine(task), task.callId, finishedLines)) break;

  const runningNotListed = running.length - runningLines.length;
  const finishedNotListed = finished.length - finishedLines.length;
  const lines = [TASKS_OPEN, HEADER];
  if (running.length > 0) {
    lines.push(`Running (${running.length}):`, ...runningLines);
    if (runningNotListed > 0)
      lines.push(
        `- (${runningNotListed} more running tasks not listed: GET /v1/sessions/{id}/tasks lists them)`,
      );
  }
  if (finished.length > 0) {
    lines.push(`Recently finished (${finishedLines.length} of ${finished.length}):`, ...finishedLines);
    if (finishedNotListed > 0) lines.push(`- (${finishedNotListed} earlier finished tasks not listed)`);
  }
  lines.push(TASKS_CLOSE);
  return { text: lines.join('\n'), listed, runningNotListed, finishedNotListed, duplicates };
}
