import { taskOutcome, type ToolPart } from '@compactor/core';
import type { Db } from '../client';
import { partFromRow } from '../mappers';
import { findMessage } from '../queries/messages';
import { listPartsOfMessages, updatePart } from '../queries/parts';
import { findSessionTask, finishSessionTask } from '../queries/session-tasks';

/**
 * Stores the results of task calls whose message is behind the context view's boundary (a
 * sub-agent or background task that finished after the compaction covered its call), which a
 * plain PATCH refuses (`message_compacted`): the raw history gets the result, the registry the
 * outcome. Only results (`completed` or `error`) of calls the registry holds as tasks qualify;
 * anything else answers null and the caller refuses the PATCH as before, with nothing written.
 * A retry that finds the same result stored is accepted as it is. Returns the calls as stored
 * afterwards (their input included), for the caller to deliver into the view, and those this
 * call finished (`fresh`: not a retry's).
 */
export async function finishCompactedTaskCalls(
  db: Db,
  sessionPk: number,
  messageId: string,
  results: readonly ToolPart[],
  at: string,
): Promise<{ parts: ToolPart[]; fresh: ToolPart[] } | null> {
  if (results.length === 0) return null;
  return db.transaction(async (tx) => {
    const row = await findMessage(tx, sessionPk, messageId, { forUpdate: true });
    if (!row || row.summary) return null;
    const stored = new Map(
      (await listPartsOfMessages(tx, [row.pk])).filter((p) => p.callId !== null).map((p) => [p.callId, p]),
    );
    const changes: Array<{ pk: number | null; part: ToolPart }> = [];
    for (const incoming of results) {
      const existing = stored.get(incoming.callId);
      if (!existing || (incoming.status !== 'completed' && incoming.status !== 'error')) return null;
      const current = partFromRow(existing) as ToolPart;
      if (current.tool !== incoming.tool) return null;
      if (!(await findSessionTask(tx, sessionPk, incoming.callId))) return null;
      const finished = current.status === 'completed' || current.status === 'error';
      if (finished) {
        const same =
          current.status === incoming.status &&
          current.output === incoming.output &&
          current.error === incoming.error;
        if (!same) return null;
        changes.push({ pk: null, part: current });
        continue;
      }
      const part: ToolPart = { ...incoming, input: current.input, compactedAt: null };
      changes.push({ pk: existing.pk, part });
    }
    for (const { pk, part } of changes) {
      if (pk !== null)
        await updatePart(tx, pk, {
          toolStatus: part.status,
          toolOutput: part.output,
          toolError: part.error,
          tokens: part.tokens,
          outputTokens: part.outputTokens,
        });
      await finishSessionTask(tx, sessionPk, {
        callId: part.callId,
        status: part.status,
        outcome: taskOutcome(part),
        at,
      });
    }
    return {
      parts: changes.map((c) => c.part),
      fresh: changes.filter((c) => c.pk !== null).map((c) => c.part),
    };
  });
}
