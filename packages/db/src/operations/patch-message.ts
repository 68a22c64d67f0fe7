import type { Finish, Message, MessageError, Part, ToolPart, ToolStatus, Usage } from '@compactor/core';
import type { Db, DbOrTx } from '../client';
import { ConflictError, NotFoundError } from '../errors';
import { canonicalJson } from '../hashing';
import { messagesFromRows, partFromRow, partToRow, usageToColumns, type PartRow } from '../mappers';
import { findMessage, updateMessage, type MessagePatch } from '../queries/messages';
import { firstKeptSeq, markCoveredChange } from '../queries/covered-changes';
import { insertParts, listPartsOfMessages, updatePart, type ToolPartPatch } from '../queries/parts';
import { rejectDeferredToolResults } from './append-messages';

/** What PATCH may change on a message. Omitted fields stay as they are. */
export interface MessageChanges {
  finish?: Finish | null;
  error?: MessageError | null;
  usage?: Usage | null;
  /** Tool parts are upserted by `callId`; other parts are appended. Token counts included. */
  parts?: Part[];
}

/** Tool calls only move forward: pending → running → completed | error. */
const STATUS_RANK: Record<ToolStatus, number> = { pending: 0, running: 1, completed: 2, error: 2 };

/**
 * Finishes a streamed turn: sets finish / usage / error and upserts tool parts by call id, in one
 * transaction with the message row locked (the result is built from what the writes return, not
 * read again). Rejects (ConflictError) a tool status that moves backwards, a change to a
 * finished or pruned tool call, any change to a message a compaction wrote, and a change to the
 * parts of a message behind the context view's boundary. Returns the message as stored afterwards.
 */
export async function patchMessage(
  db: Db,
  sessionPk: number,
  messageId: string,
  changes: MessageChanges,
): Promise<Message> {
  return db.transaction(async (tx) => {
    const row = await findMessage(tx, sessionPk, messageId, { forUpdate: true });
    if (!row) throw new NotFoundError('message not found');
    if (row.summary)
      throw new ConflictError('messages written by a compaction cannot be changed', { messageId });
    // Read once the lock is held, in a statement of its own: read committed takes a statement's
    // snapshot when it starts, so parts read in the locking statement would be those from before
    // a concurrent PATCH it waited for (whose finished call this one could then overwrite).
    const stored = await listPartsOfMessages(tx, [row.pk]);

    const toolsByCall = new Map(stored.filter((p) => p.callId !== null).map((p) => [p.callId, p]));
    // Decided before anything is written: a refused PATCH writes nothing.
    const updates: Array<{ existing: PartRow; patch: ToolPartPatch }> = [];
    const added: Part[] = [];
    for (const part of changes.parts ?? []) {
      const existing = part.type === 'tool' ? toolsByCall.get(part.callId) : undefined;
      if (part.type === 'tool' && existing) {
        const patch = toolPartChange(existing, part);
        if (patch) updates.push({ existing, patch });
      } else {
        if (part.type === 'tool') await rejectDeferredToolResults(tx, sessionPk, [{ messageId, part }]);
        added.push(part);
      }
    }
    if (updates.length > 0 || added.length > 0) await guardCoveredMessage(tx, sessionPk, row, messageId);

    // The parts as they will be stored: updated ones replaced by what the update returns.
    const after = new Map(stored.map((p) => [p.pk, p]));
    // Only an unpruned call changes (toolPartChange), so its prune state stays none.
    for (const { existing, patch } of updates)
      after.set(existing.pk, { ...(await updatePart(tx, existing.pk, patch)), compactedAt: null });
    let nextIdx = stored.reduce((max, p) => Math.max(max, p.idx), -1) + 1;
    const rows = added.map((part) =>
      partToRow(part, { messagePk: row.pk, sessionPk, seq: row.seq, idx: nextIdx++ }),
    );
    for (const inserted of await insertParts(tx, rows))
      after.set(inserted.pk, { ...inserted, compactedAt: null });

    const patch: MessagePatch = {};
    if (changes.finish !== undefined) patch.finish = changes.finish;
    if (changes.error !== undefined) patch.error = changes.error;
    if (changes.usage !== undefined) Object.assign(patch, usageToColumns(changes.usage));
    await updateMessage(tx, row.pk, patch);

    // Built from the rows the writes returned: no second read of the parts.
    const [updated] = messagesFromRows([{ ...row, ...patch }], [...after.values()]);
    if (!updated) throw new Error('patched message vanished');
    return updated;
  });
}

/**
 * A change to a message's parts must reach the model: a message behind the context view's
 * boundary was compacted (its summary was written without the change, so it would land in
 * neither) and is refused; one an active compaction covers is marked, so that compaction does
 * not move its boundary past it (queries/covered-changes.ts: the mark comes first, so a
 * completion it waited for is visible to the boundary read that follows).
 */
async function guardCoveredMessage(
  tx: DbOrTx,
  sessionPk: number,
  row: { seq: number; role: string },
  messageId: string,
): Promise<void> {
  await markCoveredChange(tx, sessionPk, row.seq);
  if (row.role !== 'system' && row.seq < (await firstKeptSeq(tx, sessionPk)))
    throw new ConflictError('the message was compacted: its parts can no longer change', {
      messageId,
      reason: 'message_compacted',
    });
}

/** The columns to update for an incoming version of a stored tool part, or null for "no change". */
function toolPartChange(storedRow: PartRow, incoming: ToolPart) {
  const stored = partFromRow(storedRow) as ToolPart;
  const conflict = (reason: string) =>
    new ConflictError(reason, { callId: incoming.callId, from: stored.status, to: incoming.status });

  if (stored.tool !== incoming.tool) throw conflict('a tool call cannot change its tool');
  if (STATUS_RANK[incoming.status] < STATUS_RANK[stored.status])
    throw conflict('tool status cannot move backwards');
  const finished = STATUS_RANK[stored.status] === 2;
  const same =
    stored.status === incoming.status &&
    stored.output === incoming.output &&
    stored.error === incoming.error &&
    // jsonb stores object keys in its own order: compare canonical forms, or a retry conflicts.
    canonicalJson(stored.input) === canonicalJson(incoming.input);
  if (same) return null;
  if (finished) throw conflict('a finished tool call cannot change');
  if (stored.compactedAt) throw conflict('a pruned tool call cannot change');
  return {
    toolStatus: incoming.status,
    toolInput: incoming.input ?? null,
    toolOutput: incoming.output,
    toolError: incoming.error,
    tokens: incoming.tokens,
    outputTokens: incoming.outputTokens,
  };
}
