/**
 * The check a served context passes after a compaction boundary: every running task is named
 * exactly once (by its `[task <callId>]` marker, in the text the model reads), so no task is lost
 * and none shows twice, whatever the summary's prose says about it.
 */
import type { Message } from '../model';
import { taskMarker } from './block';

/** What {@link verifyTasksInContext} found: call ids never named, and those named more than once. */
export interface TasksVerdict {
  missing: string[];
  repeated: string[];
}

function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count += 1;
  return count;
}

/** Counts each running task's marker over the text parts of `messages`. */
export function verifyTasksInContext(
  messages: readonly Pick<Message, 'parts'>[],
  runningCallIds: readonly string[],
): TasksVerdict {
  const texts = messages.flatMap((m) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])));
  const missing: string[] = [];
  const repeated: string[] = [];
  for (const callId of runningCallIds) {
    const marker = taskMarker(callId);
    const count = texts.reduce((sum, text) => sum + occurrences(text, marker), 0);
    if (count === 0) missing.push(callId);
    else if (count > 1) repeated.push(callId);
  }
  return { missing, repeated };
}
