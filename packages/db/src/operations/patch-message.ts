import type { Finish, Message, MessageError, Part, ToolPart, ToolStatus, Usage } from '@compactor/core';
import { eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client';
import { ConflictError, NotFoundError } from '../errors';
import { canonicalJson } from '../hashing';
import {
  messagesFromRows,
  partFromRow,
  partToRow,
  usageToColumns,
  type MessageRow,
  type PartRow,
} from '../mappers';
import type { MessagePatch } from '../queries/messages';
import { firstKeptSeqOf, firstKeptSeqSql, markCoveredChangeSql } from '../queries/covered-changes';
import {
  partColumns,
  partRowMapper,
  unfinishedToolCallOf,
  unfinishedToolCallsSql,
  type ToolPartPatch,
} from '../queries/parts';
import { rowMapper, selectList } from '../queries/raw-rows';
import { messages, parts } from '../schema';
import { pipelinedTransaction } from '../pipelined-transaction';
import { checkDeferredToolResults } from './tool-call-conflicts';

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
 *
 * Three round trips (`pipelinedTransaction`): the lock with the parts read, then the covered-change
 * mark, the boundary and the writes together, then the COMMIT, or the ROLLBACK when the boundary
 * refuses the change (what was written with it is undone). A new tool part adds one, before the
 * writes: the check that it does not finish a call stored unfinished elsewhere.
 */
export async function patchMessage(
  db: Db,
  sessionPk: number,
  messageId: string,
  changes: MessageChanges,
): Promise<Message> {
  return (await patchMessageReading(db, sessionPk, messageId, changes, null)).message;
}

/**
 * {@link patchMessage}, and `readAfter` (a read of the session, such as its status inputs) sent
 * in the transaction after the writes, in their round trip: its rows see the patch, and cost no
 * round trip of their own. Null rows when `readAfter` is null.
 */
export async function patchMessageReading(
  db: Db,
  sessionPk: number,
  messageId: string,
  changes: MessageChanges,
  readAfter: SQL | null,
): Promise<{ message: Message; readAfter: Record<string, unknown>[] | null }> {
  const after = readAfter === null ? [] : [readAfter];
  const readOf = (results: Array<{ rows: Record<string, unknown>[] }>) =>
    readAfter === null ? null : results[results.length - 1]!.rows;
  return pipelinedTransaction(db, async (send) => {
    // The parts are read once the lock is held, in a statement of their own: read committed
    // takes a statement's snapshot when it starts, so parts read in the locking statement would
    // be those from before a concurrent PATCH it waited for (whose finished call this one could
    // then overwrite). Pipelined, the second statement still starts after the first has ended.
    const [locked, partRows] = await send([
      sql`select ${selectList(messages, 'm', '')} from messages m
          where m.session_pk = ${sessionPk} and m.id = ${messageId} for update`,
      sql`select ${partColumns('', { omitPrunedOutputs: false })}
          from parts p
          left join part_prunes pp on pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx
          where p.message_pk = (select pk from messages where session_pk = ${sessionPk} and id = ${messageId})
          order by p.idx`,
    ]);
    const found = locked!.rows[0];
    if (!found) throw new NotFoundError('message not found');
    const row = messageRowOf(found);
    if (row.summary)
      throw new ConflictError('messages written by a compaction cannot be changed', { messageId });
    const stored = partRows!.rows.map(partRowOf);

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
        added.push(part);
      }
    }
    const addedCalls = added.flatMap((part) => (part.type === 'tool' ? [{ messageId, part }] : []));
    if (addedCalls.length > 0) {
      const [unfinished] = await send([
        unfinishedToolCallsSql(
          sessionPk,
          addedCalls.map((c) => c.part.callId),
        ),
      ]);
      const calls = unfinished!.rows.map(unfinishedToolCallOf);
      // Each call checked on its own, as a PATCH's parts always were.
      for (const call of addedCalls)
        checkDeferredToolResults(
          [call],
          calls.filter((c) => c.callId === call.part.callId),
        );
    }

    let nextIdx = stored.reduce((max, p) => Math.max(max, p.idx), -1) + 1;
    const inserts = added.map((part) =>
      partToRow(part, { messagePk: row.pk, sessionPk, seq: row.seq, idx: nextIdx++ }),
    );
    const patch: MessagePatch = {};
    if (changes.finish !== undefined) patch.finish = changes.finish;
    if (changes.error !== undefined) patch.error = changes.error;
    if (changes.usage !== undefined) Object.assign(patch, usageToColumns(changes.usage));
    const partsChange = updates.length > 0 || inserts.length > 0;
    // A change to a message's parts must reach the model: a message behind the context view's
    // boundary was compacted (its summary was written without the change, so it would land in
    // neither) and is refused; one an active compaction covers is marked, so that compaction
    // does not move its boundary past it (queries/covered-changes.ts: the mark comes first, so a
    // completion it waited for is visible to the boundary read that follows). The writes go in
    // the same round trip, undone by the rollback when the boundary refuses them.
    const guard = partsChange ? [markCoveredChangeSql(sessionPk, row.seq), firstKeptSeqSql(sessionPk)] : [];
    const writes = [
      ...updates.map(({ existing, patch: columns }) =>
        db.update(parts).set(columns).where(eq(parts.pk, existing.pk)).returning().getSQL(),
      ),
      ...(inserts.length > 0 ? [db.insert(parts).values(inserts).returning().getSQL()] : []),
      ...(Object.keys(patch).length > 0
        ? [db.update(messages).set(patch).where(eq(messages.pk, row.pk)).getSQL()]
        : []),
    ];
    if (guard.length === 0 && writes.length === 0) {
      const read = after.length > 0 ? readOf(await send(after, { commit: true })) : null;
      return { message: messagesFromOne(row, stored), readAfter: read };
    }
    const results = await send([...guard, ...writes, ...after], { commit: guard.length === 0 });
    if (partsChange && row.role !== 'system' && row.seq < firstKeptSeqOf(results[1]!.rows))
      throw new ConflictError('the message was compacted: its parts can no longer change', {
        messageId,
        reason: 'message_compacted',
      });
    const written = results.slice(guard.length);

    // The parts as they will be stored: updated ones replaced by what the update returns.
    // Only an unpruned call changes (toolPartChange), so its prune state stays none.
    const partsAfter = new Map(stored.map((p) => [p.pk, p]));
    for (let i = 0; i < updates.length; i++) {
      const updated = written[i]!.rows[0];
      if (!updated) throw new Error(`part ${updates[i]!.existing.pk} vanished while its message was locked`);
      partsAfter.set(updates[i]!.existing.pk, { ...partColumnsOf(updated), compactedAt: null });
    }
    if (inserts.length > 0)
      for (const inserted of written[updates.length]!.rows)
        partsAfter.set(Number(inserted['pk']), { ...partColumnsOf(inserted), compactedAt: null });
    // Built from the rows the writes returned: no second read of the parts.
    return {
      message: messagesFromOne({ ...row, ...patch }, [...partsAfter.values()]),
      readAfter: readOf(results),
    };
  });
}

const messageRowOf = rowMapper(messages, '');
const partColumnsOf = rowMapper(parts, '');
const partRowOf = partRowMapper('');

function messagesFromOne(row: MessageRow, partRows: PartRow[]): Message {
  const [message] = messagesFromRows([row], partRows);
  if (!message) throw new Error('patched message vanished');
  return message;
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
