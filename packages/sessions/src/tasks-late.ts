/**
 * A task's result that arrives after a compaction covered its call. The call is behind the
 * boundary, so a PATCH of its message is refused (`message_compacted`: a summary was written
 * without it). For a task call (in the session's registry) the result is stored on the call
 * anyway (the raw history and recall have it) and delivered into the view as a user message
 * holding a `<task-notification>` that names the task and what it was asked (core
 * `taskNotificationText`), appended like any message: counted, compacted later, idempotent by
 * its id (`task-result-<callId>`), so a retried PATCH delivers it once.
 */
import { taskNotificationText, taskNotificationMessageId, type Part, type ToolPart } from '@compactor/core';
import {
  ConflictError,
  findMessage,
  finishCompactedTaskCalls,
  listPartsOfMessages,
  markTaskDelivered,
  messagesFromRows,
  type SessionRow,
} from '@compactor/db';
import type { AppendMessagesBody } from '@compactor/contract';
import type { z } from 'zod';
import type { AppendAnswer, FinishMessageAnswer } from './answers';
import type { OperationLog, SessionResources } from './resources';
import { announceFinishedTasks } from './tasks';

/** Whether `error` is the refusal of a change to a message behind the boundary. */
export function isCompactedMessageConflict(error: unknown): boolean {
  return error instanceof ConflictError && error.details.reason === 'message_compacted';
}

type AppendBatch = z.infer<typeof AppendMessagesBody>['messages'];

/**
 * Stores and delivers the task results of a PATCH refused as `message_compacted`; null when the
 * PATCH is not only results of task calls (the caller refuses it as before: nothing written).
 * `append` appends the notification messages through the session's ordinary append.
 */
export async function finishTaskCallsLate(
  resources: SessionResources,
  session: SessionRow,
  messageId: string,
  parts: readonly Part[],
  log: OperationLog,
  append: (batch: AppendBatch) => Promise<AppendAnswer>,
): Promise<FinishMessageAnswer | null> {
  if (parts.length === 0 || parts.some((p) => p.type !== 'tool')) return null;
  const at = resources.clock().toISOString();
  const outcome = await finishCompactedTaskCalls(
    resources.db,
    session.pk,
    messageId,
    parts as ToolPart[],
    at,
  );
  if (!outcome) return null;
  const finished = outcome.parts;
  const answer = await append(
    finished.map((part) => ({
      id: taskNotificationMessageId(part.callId),
      role: 'user' as const,
      parts: [{ type: 'text' as const, text: taskNotificationText(part) }],
      metadata: { type: 'task_result', callId: part.callId },
    })),
  );
  for (const [i, part] of finished.entries()) {
    const delivered = answer.messages[i];
    if (delivered)
      await markTaskDelivered(resources.db, session.pk, { callId: part.callId, seq: delivered.seq });
  }
  await announceFinishedTasks(resources, session, outcome.fresh, log);
  const row = await findMessage(resources.db, session.pk, messageId);
  const [message] = row ? messagesFromRows([row], await listPartsOfMessages(resources.db, [row.pk])) : [];
  if (!message) return null;
  return {
    ...message,
    status: answer.status,
    compaction: answer.compaction,
    prune: answer.prune,
    taskResults: finished.map((part, i) => ({
      callId: part.callId,
      messageId: taskNotificationMessageId(part.callId),
      seq: answer.messages[i]?.seq ?? null,
    })),
  };
}
