/**
 * A task's record: what the session's registry keeps of a task call, bounded whatever the call's
 * input or result holds, so the registry and the block rendered from it stay small.
 */
import type { ToolPart, ToolStatus } from '../model';

/** Characters of the input a record keeps as "what it was asked". */
export const TASK_ASKED_MAX_CHARS = 300;
/** Characters of a result or error a record keeps as its outcome. */
export const TASK_OUTCOME_MAX_CHARS = 300;

/** A task as the registry holds it. Times are ISO-8601. */
export interface TaskRecord {
  /** The call id: the task's id. */
  callId: string;
  tool: string;
  status: ToolStatus;
  /** A bounded, single-line excerpt of the call's input: what the task was asked. */
  asked: string;
  /** Same tool and same input give the same key: two running tasks with one key are a duplicate dispatch. */
  dedupeKey: string;
  /** The message that holds the call, and its seq. */
  messageId: string;
  seq: number;
  startedAt: string;
  finishedAt: string | null;
  /** A bounded excerpt of the result (or the error), once finished. */
  outcome: string | null;
}

/** Input fields that say what a task was asked, most telling first. */
const ASKED_FIELDS = ['description', 'prompt', 'command', 'task', 'message', 'instructions', 'query'];

/** `text` on one line (whitespace collapsed), cut to `max` characters with `…`. */
export function oneLineExcerpt(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (line.length <= max) return line;
  let end = Math.max(0, max - 1);
  const code = line.charCodeAt(end);
  if (code >= 0xdc00 && code <= 0xdfff) end -= 1;
  return `${line.slice(0, end)}…`;
}

/** The canonical JSON of a value: object keys sorted, so one input always reads the same. */
export function canonicalInput(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>)
          .filter(([, inner]) => inner !== undefined)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, inner]) => [k, sort(inner)]),
      );
    return v;
  };
  return JSON.stringify(sort(value)) ?? 'null';
}

/** What a call was asked: its telling fields (`description: … prompt: …`), else its whole input. */
export function askedExcerpt(input: unknown, max = TASK_ASKED_MAX_CHARS): string {
  if (typeof input === 'string') return oneLineExcerpt(input, max);
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const fields = input as Record<string, unknown>;
    const told = ASKED_FIELDS.filter((key) => typeof fields[key] === 'string' && fields[key] !== '');
    if (told.length > 0)
      return oneLineExcerpt(told.map((key) => `${key}: ${fields[key] as string}`).join(' · '), max);
  }
  return oneLineExcerpt(canonicalInput(input ?? null), max);
}

/** A 53-bit hash of a string as 14 hex digits (cyrb53): a key, not a secret. */
function hash53(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0');
}

/** The duplicate-dispatch key of a call: its tool (as compared) and its canonical input. */
export function taskDedupeKey(tool: string, input: unknown): string {
  return hash53(`${tool.toLowerCase()}\u0000${canonicalInput(input ?? null)}`);
}

/** The outcome of a finished call: its result or error, bounded; null while it runs. */
export function taskOutcome(part: Pick<ToolPart, 'status' | 'output' | 'error'>): string | null {
  if (part.status === 'completed') return oneLineExcerpt(part.output ?? '', TASK_OUTCOME_MAX_CHARS);
  if (part.status === 'error') return oneLineExcerpt(part.error ?? '', TASK_OUTCOME_MAX_CHARS);
  return null;
}

/** Whether a status means the task has ended. */
export function isFinishedStatus(status: ToolStatus): boolean {
  return status === 'completed' || status === 'error';
}

/** The record of a task call held by message `messageId` at `seq`, written at `at`. */
export function taskRecordFromPart(
  part: ToolPart,
  where: { messageId: string; seq: number; at: string },
): TaskRecord {
  const finished = isFinishedStatus(part.status);
  return {
    callId: part.callId,
    tool: part.tool,
    status: part.status,
    asked: askedExcerpt(part.input),
    dedupeKey: taskDedupeKey(part.tool, part.input),
    messageId: where.messageId,
    seq: where.seq,
    startedAt: where.at,
    finishedAt: finished ? where.at : null,
    outcome: taskOutcome(part),
  };
}
