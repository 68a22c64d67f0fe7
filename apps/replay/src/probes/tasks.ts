/**
 * The tasks probe: after a compaction, are the sub-agents and background tasks whose calls it
 * covered still in the context the model gets? Each task call (core's default task tools, or
 * the message's `metadata.taskCallIds`) among the compacted messages of the transcript is:
 *
 * - `alive`: named by its `[task <callId>]` marker in the served context (the `<tasks>` block);
 * - `deliveredLate`: named by a `<task-notification>` message (its result landed after the call
 *   was compacted);
 * - `lost`: neither, while the transcript still had it running when it was compacted. Must be 0.
 *
 * A compacted task that had finished and is not named is not lost: its outcome was delivered
 * before the boundary (`finished`).
 */
import {
  parseTaskTools,
  DEFAULT_TASK_TOOLS,
  taskMarker,
  taskPartsOf,
  type Message,
  type ToolPart,
} from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import type { ContextMessage } from './retention';

export interface TasksProbe {
  /** Task calls among the compacted messages. */
  compacted: number;
  alive: number;
  deliveredLate: number;
  /** Compacted tasks that had finished and are not named (nothing to carry). */
  finished: number;
  lost: number;
}

const RULES = parseTaskTools(DEFAULT_TASK_TOOLS);

/** The probe for the first `compactedCount` messages of `messages`, against the served `context`. */
export function probeTasks(input: {
  messages: readonly MessageInput[];
  compactedCount: number;
  context: readonly ContextMessage[];
}): TasksProbe {
  const texts = input.context.flatMap((m) =>
    m.parts.flatMap((p) => (typeof p.text === 'string' ? [p.text] : [])),
  );
  const notifications = texts.filter((t) => t.startsWith('<task-notification>'));
  const others = texts.filter((t) => !t.startsWith('<task-notification>'));
  const probe: TasksProbe = { compacted: 0, alive: 0, deliveredLate: 0, finished: 0, lost: 0 };
  for (const message of input.messages.slice(0, input.compactedCount)) {
    const parts = taskPartsOf(
      { role: message.role, parts: message.parts as Message['parts'], metadata: message.metadata ?? {} },
      RULES,
    ) as ToolPart[];
    for (const part of parts) {
      probe.compacted += 1;
      const marker = taskMarker(part.callId);
      if (notifications.some((t) => t.includes(marker))) probe.deliveredLate += 1;
      else if (others.some((t) => t.includes(marker))) probe.alive += 1;
      else if (part.status === 'completed' || part.status === 'error') probe.finished += 1;
      else probe.lost += 1;
    }
  }
  return probe;
}
