/**
 * Where the tasks block and a late result go in what the model reads.
 *
 * The block joins the compaction's last summary message as one more text part (pinned like the
 * summary's own pinned section, but rendered from the registry at every read); a compaction that
 * wrote no summary gets it as a user message of its own right after the pinned messages. A
 * result that lands after its call was compacted is delivered as a user message holding a
 * `<task-notification>` (the form Claude Code delivers background results in, which the summary
 * check reads as harness text, never as the user's words) naming the task and what it was asked.
 */
import type { Message, TextPart, ToolPart } from '../model';
import { taskMarker } from './block';
import { askedExcerpt, oneLineExcerpt } from './record';

/** Characters of a late result a notification carries whole; a longer one keeps its head and tail. */
export const TASK_NOTIFICATION_MAX_CHARS = 20_000;

/** The id of the message that delivers call `callId`'s late result (re-delivery is idempotent by it). */
export function taskNotificationMessageId(callId: string): string {
  return `task-result-${callId}`.slice(0, 256);
}

function bounded(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[... ${text.length - max} characters of the result left out]\n${text.slice(-half)}`;
}

/** The text of the message that delivers a finished task call's result after its call was compacted. */
export function taskNotificationText(
  part: Pick<ToolPart, 'callId' | 'tool' | 'input' | 'status' | 'output' | 'error'>,
): string {
  const asked = askedExcerpt(part.input).replace(/<(\/?)task/gi, '‹$1task');
  const body = part.status === 'error' ? (part.error ?? '') : (part.output ?? '');
  const safe = bounded(body, TASK_NOTIFICATION_MAX_CHARS).replace(
    /<\/task-notification/gi,
    '‹/task-notification',
  );
  return [
    '<task-notification>',
    `${taskMarker(part.callId)} ${oneLineExcerpt(part.tool, 64)} ${part.status === 'error' ? 'failed' : 'completed'} after the conversation was compacted.`,
    `It was asked: ${asked}`,
    part.status === 'error' ? 'Error:' : 'Result:',
    safe,
    '</task-notification>',
  ].join('\n');
}

/**
 * `messages` (a served view after a boundary) with the block added: as a text part of the last
 * summary message, or as its own user message after the pinned and summary messages. `tokens`
 * is the block's exact count. The block's message keeps its seq, so the view's order holds.
 */
export function withTasksBlock(
  messages: readonly Message[],
  block: { text: string; tokens: number },
  where: { summaryMessageIds: readonly string[]; compactionId: string },
): Message[] {
  if (block.text === '') return [...messages];
  const part: TextPart = { type: 'text', text: block.text, tokens: block.tokens };
  const summaries = new Set(where.summaryMessageIds);
  let last = -1;
  messages.forEach((m, i) => {
    if (m.summary && summaries.has(m.id)) last = i;
  });
  if (last >= 0) return messages.map((m, i) => (i === last ? { ...m, parts: [...m.parts, part] } : m));
  // No summary: after the leading pinned system messages.
  let at = 0;
  while (at < messages.length && messages[at]!.role === 'system' && !messages[at]!.summary) at += 1;
  const next = messages[at];
  const synthetic: Message = {
    id: `tasks-${where.compactionId}`,
    seq: next ? next.seq : (messages.at(-1)?.seq ?? 0),
    role: 'user',
    parts: [part],
    finish: null,
    error: null,
    usage: null,
    createdAt: next?.createdAt ?? messages.at(-1)?.createdAt ?? new Date(0).toISOString(),
    metadata: { type: 'tasks_block' },
    summary: true,
    compactionId: where.compactionId,
  };
  return [...messages.slice(0, at), synthetic, ...messages.slice(at)];
}
