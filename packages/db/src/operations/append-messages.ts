import type { ToolPart } from '@compactor/core';
import type { Db, DbOrTx } from '../client';
import { canonicalJson } from '../hashing';
import { ConflictError, NotFoundError } from '../errors';
import { partToRow, type NewPartRow } from '../mappers';
import { findMessagesByIds, insertMessages } from '../queries/messages';
import { findUnfinishedToolCalls, insertParts } from '../queries/parts';
import { lockSession, reserveSeqs } from '../queries/sessions';
import { messageToRow, type NewMessage } from './new-message';

/** Where one message of a batch landed; {@link appendMessages} returns these in batch order. */
export interface AppendedMessage {
  id: string;
  seq: number;
  /** `false` when the id was already stored with identical content (an idempotent re-post). */
  created: boolean;
}

/** Postgres allows 65,535 bind parameters per statement; part rows have ~20 columns. */
const PART_ROWS_PER_INSERT = 1000;

/**
 * Appends a batch in order, atomically. Ids already stored with the same content hash return
 * their seq and write nothing; an id stored with different content fails the whole batch with
 * a ConflictError. The session row is locked first, so concurrent appends to one session are
 * serialised and seqs stay gap-free and ordered.
 */
export async function appendMessages(
  db: Db,
  sessionPk: number,
  batch: NewMessage[],
): Promise<AppendedMessage[]> {
  return db.transaction((tx) => appendMessagesInTx(tx, sessionPk, batch));
}

/** The same, inside a caller's transaction (compactions write their summary messages this way). */
export async function appendMessagesInTx(
  tx: DbOrTx,
  sessionPk: number,
  batch: NewMessage[],
): Promise<AppendedMessage[]> {
  if (!(await lockSession(tx, sessionPk))) throw new NotFoundError('session not found');
  const stored = new Map(
    (
      await findMessagesByIds(
        tx,
        sessionPk,
        batch.map((m) => m.id),
      )
    ).map((r) => [r.id, r]),
  );

  const conflicting = batch.filter(
    (m) => stored.has(m.id) && stored.get(m.id)?.contentHash !== m.contentHash,
  );
  if (conflicting.length > 0) {
    throw new ConflictError('a message with this id was already stored with different content', {
      messageIds: conflicting.map((m) => m.id),
    });
  }

  const fresh = batch.filter((m) => !stored.has(m.id));
  await rejectDeferredToolResults(
    tx,
    sessionPk,
    fresh.flatMap((m) =>
      m.parts.flatMap((part) => (part.type === 'tool' ? [{ messageId: m.id, part }] : [])),
    ),
  );
  const insertedById = new Map((await insertNewMessages(tx, sessionPk, fresh)).map((row) => [row.id, row]));

  return batch.map((message) => {
    const existing = stored.get(message.id);
    if (existing) return { id: message.id, seq: existing.seq, created: false };
    const row = insertedById.get(message.id);
    return { id: message.id, seq: row?.seq ?? 0, created: true };
  });
}

/**
 * Inserts messages known to be new (no id stored yet) with their parts, at the next seqs; the
 * seq reservation locks the session row. Returns each message's pk and seq.
 */
export async function insertNewMessages(
  tx: DbOrTx,
  sessionPk: number,
  fresh: NewMessage[],
): Promise<Array<{ pk: number; id: string; seq: number }>> {
  if (fresh.length === 0) return [];
  const firstSeq = await reserveSeqs(tx, sessionPk, fresh.length);
  const inserted = await insertMessages(
    tx,
    fresh.map((message, i) => messageToRow(message, sessionPk, firstSeq + i)),
  );
  const insertedById = new Map(inserted.map((row) => [row.id, row]));
  const partRows: NewPartRow[] = [];
  for (const message of fresh) {
    const row = insertedById.get(message.id);
    if (!row) throw new Error(`message ${message.id} was not inserted`);
    message.parts.forEach((part, idx) =>
      partRows.push(partToRow(part, { messagePk: row.pk, sessionPk, seq: row.seq, idx })),
    );
  }
  for (let i = 0; i < partRows.length; i += PART_ROWS_PER_INSERT) {
    await insertParts(tx, partRows.slice(i, i + PART_ROWS_PER_INSERT));
  }
  return inserted;
}

/**
 * A tool part carries its call and its result. A client that stored a call as pending or
 * running must finish it with PATCH on that message; posting the same call again (same id,
 * tool and arguments) in a new message would be a second, result-only copy of it. That shape is
 * refused with a pointer to PATCH. A new call that merely reuses an id (some providers number
 * calls `call_0`, `call_1` … in every turn) is a different call and is accepted: the renderer
 * keeps ids unique.
 */
export async function rejectDeferredToolResults(
  tx: DbOrTx,
  sessionPk: number,
  calls: Array<{ messageId: string; part: ToolPart }>,
): Promise<void> {
  const unfinished = new Map<string, { messageId: string; tool: string; input: unknown }>();
  for (const { messageId, part } of calls) {
    const earlier = unfinished.get(part.callId);
    if (earlier && sameCall(earlier, part)) throw deferredResultConflict(part.callId, earlier.messageId);
    if (part.status === 'pending' || part.status === 'running') {
      unfinished.set(part.callId, { messageId, tool: part.tool, input: part.input });
    }
  }
  const stored = await findUnfinishedToolCalls(
    tx,
    sessionPk,
    calls.map((c) => c.part.callId),
  );
  for (const { part } of calls) {
    const match = stored.find((s) => s.callId === part.callId && sameCall(s, part));
    if (match) throw deferredResultConflict(match.callId, match.messageId);
  }
}

function sameCall(a: { tool: string; input: unknown }, b: { tool: string; input: unknown }): boolean {
  return a.tool === b.tool && canonicalJson(a.input ?? {}) === canonicalJson(b.input ?? {});
}

/** The ConflictError for re-posting a still-unfinished tool call: it names the message to PATCH instead. */
export function deferredResultConflict(callId: string, messageId: string): ConflictError {
  return new ConflictError(
    `tool call ${callId} is still unfinished in message ${messageId}: report its result with PATCH /v1/sessions/:id/messages/${messageId}`,
    { callId, messageId },
  );
}
