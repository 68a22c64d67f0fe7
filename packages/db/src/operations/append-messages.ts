import type { SQL } from 'drizzle-orm';
import type { Db, DbOrTx } from '../client';
import { ConflictError, NotFoundError } from '../errors';
import { partToRow, usageToColumns } from '../mappers';
import { sessionFromRow } from '../queries/sessions';
import type { SessionRow } from '../mappers';
import {
  callAppend,
  appendAfterSql,
  appendToSessionResult,
  appendToSessionSql,
  callAppendToSession,
  serializeBatchRows,
  type AppendToSessionResult,
  type BatchMessageRow,
  type BatchPartRow,
  type SerializedBatchRows,
} from '../queries/append-batch';
import { executePipelined } from '../pipeline';
import type { NewMessage } from './new-message';
import { checkDeferredToolResults, ownDeferredResult, toolCallsOf } from './tool-call-conflicts';
import { storeMediaObjects } from '../media/store';
import type { MediaObjectInput } from '../media/references';

/** Where one message of a batch landed; {@link appendToSession} returns these in batch order. */
export interface AppendedMessage {
  id: string;
  seq: number;
  /** `false` when the id was already stored with identical content (an idempotent re-post). */
  created: boolean;
}

/**
 * What the one append statement is sent for a batch: its message and call ids and, when the
 * statement can decide the batch (not empty, no call posted unfinished and again within it),
 * its rows; `batch: null` leaves the decision to {@link appendMessagesInTx}.
 */
function statementCall(batch: NewMessage[]): {
  messageIds: string[];
  callIds: string[];
  batch: ReturnType<typeof batchRows> | null;
} {
  const calls = toolCallsOf(batch);
  const decidable = batch.length > 0 && !ownDeferredResult(calls);
  return {
    messageIds: batch.map((m) => m.id),
    callIds: calls.map((c) => c.part.callId),
    batch: decidable ? batchRows(batch) : null,
  };
}

/**
 * A batch made ready to store by {@link serializeBatch}, its rows already serialised, so that
 * appending it costs the event loop no work in proportion to its text: what a worker thread hands
 * back for a large body. Only a batch the one statement can decide (see {@link appendToSession})
 * is serialised; what it says of the batch is what that statement needs.
 */
export interface SerializedBatch {
  messageIds: string[];
  callIds: string[];
  rows: SerializedBatchRows;
  /** The media objects its file parts refer to (stored before the rows). */
  media?: MediaObjectInput[];
}

/**
 * The batch serialised for {@link appendToSession}, or null when the one statement could not
 * decide it anyway (empty, or a call posted unfinished and again in the batch itself).
 */
export function serializeBatch(batch: NewMessage[]): SerializedBatch | null {
  const calls = toolCallsOf(batch);
  if (batch.length === 0 || ownDeferredResult(calls)) return null;
  const media = batch.flatMap((m) => m.media ?? []);
  return {
    messageIds: batch.map((m) => m.id),
    callIds: calls.map((c) => c.part.callId),
    rows: serializeBatchRows(batchRows(batch)),
    ...(media.length > 0 ? { media } : {}),
  };
}

/** What {@link appendToSession} did. */
export type SessionAppend =
  | { kind: 'missing' }
  /** The session's model is not the one the batch was counted for: nothing was written. */
  | { kind: 'model-changed'; session: SessionRow }
  /**
   * A {@link SerializedBatch} the statement could not decide (an id already stored, a call id
   * stored unfinished): nothing was written; append the batch itself to decide.
   */
  | { kind: 'needs-batch'; session: SessionRow }
  | {
      kind: 'appended';
      session: SessionRow;
      appended: AppendedMessage[];
      /** The rows of `readAfter`, when it ran after this append (see {@link appendToSession}). */
      readAfter?: Record<string, unknown>[];
    };

/**
 * Appends a batch in order, atomically, to the session a client names. Ids already stored with
 * the same content hash return their seq and write nothing; an id stored with different content
 * fails the whole batch with a ConflictError. The session row is locked first, so concurrent
 * appends to one session are serialised and seqs stay gap-free and ordered.
 *
 * The session is found in the same statement: its model's encoding counts the batch. The caller
 * counts with the model it expects (the one this session had last time) and gets the session
 * back as it was locked; a session whose model changed since writes nothing and comes back as
 * `model-changed`, to be counted again. Most batches are all new and touch no unfinished call:
 * the one statement checks that under the lock and inserts them. Anything else (a re-post, a
 * call stored unfinished, a result for a call in the same batch) wrote nothing and goes through
 * {@link appendMessagesInTx}, which decides.
 *
 * `readAfter`: a read of the session the caller expects (by its pk) sent in the same round trip,
 * after the append and in its transaction (`executePipelined`), so it sees the batch. Its rows
 * come back only when they are that: the one statement appended, to the session of that pk.
 */
export async function appendToSession(
  db: Db,
  target: { tenantId: string; id: string; modelId: string },
  batch: NewMessage[] | SerializedBatch,
  { readAfter }: { readAfter?: { sessionPk: number; query: SQL } } = {},
): Promise<SessionAppend> {
  const serialized = Array.isArray(batch) ? null : batch;
  // The bytes first: a stored part never refers to an object that is not there (an append then
  // refused leaves the object, content-addressed, for the tenant's next post of it).
  const media = serialized ? (serialized.media ?? []) : (batch as NewMessage[]).flatMap((m) => m.media ?? []);
  if (media.length > 0) await storeMediaObjects(db, target.tenantId, media);
  const call = serialized
    ? { messageIds: serialized.messageIds, callIds: serialized.callIds, batch: serialized.rows }
    : statementCall(batch as NewMessage[]);
  const decidable = call.batch !== null;
  let result: AppendToSessionResult;
  let read: Record<string, unknown>[] | undefined;
  if (readAfter && decidable) {
    const [appendRows, readRows] = await executePipelined(db, [
      appendToSessionSql(target, call),
      readAfter.query,
    ]);
    result = appendToSessionResult(appendRows!.rows);
    read = readRows!.rows;
  } else {
    result = await callAppendToSession(db, target, call);
  }
  if (!result.found || !result.session) return { kind: 'missing' };
  const session = sessionFromRow(result.session);
  if (result.modelChanged) return { kind: 'model-changed', session };
  if (result.inserted.length > 0) {
    const appended = allCreated(call.messageIds, result.inserted);
    return read && session.pk === readAfter?.sessionPk
      ? { kind: 'appended', session, appended, readAfter: read }
      : { kind: 'appended', session, appended };
  }
  if (serialized) return { kind: 'needs-batch', session };
  const appended = await db.transaction((tx) => appendMessagesInTx(tx, session.pk, batch as NewMessage[]));
  return { kind: 'appended', session, appended };
}

/**
 * Appends a batch to the session of `sessionPk` inside a caller's transaction, deciding what the
 * one statement of {@link appendToSession} left undecided: the lock and what the batch must be
 * checked against (stored ids, unfinished calls) in one statement, the decision here, then the
 * insert.
 */
export async function appendMessagesInTx(
  tx: DbOrTx,
  sessionPk: number,
  batch: NewMessage[],
): Promise<AppendedMessage[]> {
  const calls = toolCallsOf(batch);
  const lookup = await callAppend(tx, sessionPk, {
    check: true,
    messageIds: batch.map((m) => m.id),
    callIds: calls.map((c) => c.part.callId),
    batch: null,
  });
  if (!lookup.found) throw new NotFoundError('session not found');
  const stored = new Map(lookup.existing.map((r) => [r.id, r]));

  const conflicting = batch.filter(
    (m) => stored.has(m.id) && stored.get(m.id)?.contentHash !== m.contentHash,
  );
  if (conflicting.length > 0) {
    throw new ConflictError('a message with this id was already stored with different content', {
      messageIds: conflicting.map((m) => m.id),
    });
  }

  const fresh = batch.filter((m) => !stored.has(m.id));
  const freshIds = new Set(fresh.map((m) => m.id));
  checkDeferredToolResults(
    calls.filter((c) => freshIds.has(c.messageId)),
    lookup.unfinished,
  );
  const insertedById = new Map((await insertNewMessages(tx, sessionPk, fresh)).map((row) => [row.id, row]));

  return batch.map((message) => {
    const existing = stored.get(message.id);
    if (existing) return { id: message.id, seq: existing.seq, created: false };
    return { id: message.id, seq: insertedSeq(insertedById, message.id), created: true };
  });
}

/**
 * Inserts messages known to be new (no id stored yet) with their parts, at the next seqs, in one
 * statement that takes the session lock. Returns each message's pk, id and seq, in seq order.
 */
export async function insertNewMessages(
  tx: DbOrTx,
  sessionPk: number,
  fresh: NewMessage[],
): Promise<Array<{ pk: number; id: string; seq: number }>> {
  if (fresh.length === 0) return [];
  const result = await callAppend(tx, sessionPk, { check: false, batch: batchRows(fresh) });
  if (!result.found) throw new NotFoundError('session not found');
  return result.inserted.sort((a, b) => a.seq - b.seq);
}

/**
 * {@link insertNewMessages} in the statement of `guard` (a data-modifying statement that returns
 * `session_pk`), for a caller that sends it with others: the messages are written only when the
 * guard wrote its row, and the statement returns no rows when it did not.
 */
export function newMessagesAfterSql(guard: SQL, fresh: NewMessage[]): SQL {
  return appendAfterSql(guard, batchRows(fresh));
}

/** The batch, every message created at the seq the insert gave it. */
function allCreated(ids: string[], inserted: Array<{ id: string; seq: number }>): AppendedMessage[] {
  const byId = new Map(inserted.map((row) => [row.id, row]));
  return ids.map((id) => ({ id, seq: insertedSeq(byId, id), created: true }));
}

/**
 * The seq the insert gave message `id`. The statement inserts every new message of the batch or
 * none, so a missing one is a broken invariant, never a seq to make up.
 */
function insertedSeq(inserted: Map<string, { seq: number }>, id: string): number {
  const row = inserted.get(id);
  if (!row) throw new Error(`append: the insert returned no seq for message ${id}`);
  return row.seq;
}

function batchRows(batch: NewMessage[]) {
  return { messages: batch.map(batchMessageRow), parts: batch.flatMap(batchPartRows) };
}

function batchMessageRow(message: NewMessage): BatchMessageRow {
  const usage = usageToColumns(message.usage);
  return {
    id: message.id,
    role: message.role,
    finish: message.finish,
    error: message.error,
    usage_input: usage.usageInput,
    usage_output: usage.usageOutput,
    usage_reasoning: usage.usageReasoning,
    usage_cache_read: usage.usageCacheRead,
    usage_cache_write: usage.usageCacheWrite,
    metadata: message.metadata,
    summary: message.summary ?? false,
    compaction_id: message.compactionId ?? null,
    content_hash: message.contentHash,
    created_at: message.createdAt.toISOString(),
  };
}

function batchPartRows(message: NewMessage): BatchPartRow[] {
  return message.parts.map((part, idx) => {
    // The same columns as every other writer of parts (partToRow); pk and seq come from the insert.
    const row = partToRow(part, { messagePk: 0, sessionPk: 0, seq: 0, idx });
    return {
      message_id: message.id,
      idx,
      type: row.type,
      text: row.text ?? null,
      call_id: row.callId ?? null,
      tool: row.tool ?? null,
      tool_status: row.toolStatus ?? null,
      tool_input: row.toolInput ?? null,
      tool_output: row.toolOutput ?? null,
      tool_error: row.toolError ?? null,
      mime: row.mime ?? null,
      filename: row.filename ?? null,
      url: row.url ?? null,
      compaction_auto: row.compactionAuto ?? null,
      tokens: row.tokens,
      output_tokens: row.outputTokens ?? 0,
    };
  });
}
