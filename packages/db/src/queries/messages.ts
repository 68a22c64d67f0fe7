import { and, asc, desc, eq, getTableColumns, gt, gte, inArray, not, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { MessageRow } from '../mappers';
import { compactions, messages } from '../schema';

/** A `messages` row to insert; build one with `messageToRow`. */
export type NewMessageRow = typeof messages.$inferInsert;

/** A stored message's identity and content hash, for the idempotent-append check. */
export interface ExistingMessageRef {
  pk: number;
  id: string;
  seq: number;
  contentHash: string;
}

/** Which of these client ids a session already has, with what content (idempotent appends). */
export async function findMessagesByIds(
  db: DbOrTx,
  sessionPk: number,
  ids: string[],
): Promise<ExistingMessageRef[]> {
  if (ids.length === 0) return [];
  return db
    .select({ pk: messages.pk, id: messages.id, seq: messages.seq, contentHash: messages.contentHash })
    .from(messages)
    .where(and(eq(messages.sessionPk, sessionPk), inArray(messages.id, ids)));
}

/** Inserts rows whose seqs `reserveSeqs` handed out (session locked); returns each row's pk, id and seq. */
export async function insertMessages(
  db: DbOrTx,
  rows: NewMessageRow[],
): Promise<Array<{ pk: number; id: string; seq: number }>> {
  if (rows.length === 0) return [];
  return db.insert(messages).values(rows).returning({ pk: messages.pk, id: messages.id, seq: messages.seq });
}

/** One message by client id, locked for update when `forUpdate` (PATCH of a streamed turn). */
export async function findMessage(
  db: DbOrTx,
  sessionPk: number,
  id: string,
  { forUpdate = false } = {},
): Promise<MessageRow | null> {
  const query = db
    .select()
    .from(messages)
    .where(and(eq(messages.sessionPk, sessionPk), eq(messages.id, id)));
  const [row] = forUpdate ? await query.for('update') : await query;
  return row ?? null;
}

/** The message columns a PATCH may change: finish, error and usage. */
export type MessagePatch = Partial<
  Pick<
    NewMessageRow,
    | 'finish'
    | 'error'
    | 'usageInput'
    | 'usageOutput'
    | 'usageReasoning'
    | 'usageCacheRead'
    | 'usageCacheWrite'
  >
>;

/** Updates a message row by pk; an empty patch is a no-op. */
export async function updateMessage(db: DbOrTx, pk: number, patch: MessagePatch): Promise<void> {
  if (Object.keys(patch).length === 0) return;
  await db.update(messages).set(patch).where(eq(messages.pk, pk));
}

/** A page of the raw history, by seq. */
export async function listMessages(
  db: DbOrTx,
  sessionPk: number,
  { afterSeq, limit }: { afterSeq: number; limit: number },
): Promise<MessageRow[]> {
  return db
    .select()
    .from(messages)
    .where(and(eq(messages.sessionPk, sessionPk), gt(messages.seq, afterSeq)))
    .orderBy(asc(messages.seq))
    .limit(limit);
}

/**
 * The context view's message filter, in one statement: the latest completed compaction's
 * summary messages, every non-summary message from its boundary on, and (policy
 * `pinSystemMessages`) the session's own system messages from before it, which are never
 * compacted. With no completed compaction: every non-summary message. A pending, running or
 * failed compaction changes nothing because only `status = 'completed'` rows are considered.
 */
export async function listContextMessages(
  db: DbOrTx,
  sessionPk: number,
  { pinSystemMessages = true }: { pinSystemMessages?: boolean } = {},
): Promise<MessageRow[]> {
  const latest = db.$with('latest').as(
    db
      .select({ boundarySeq: compactions.boundarySeq, summaryMessageIds: compactions.summaryMessageIds })
      .from(compactions)
      .where(and(eq(compactions.sessionPk, sessionPk), eq(compactions.status, 'completed')))
      .orderBy(desc(compactions.finishedAt), desc(compactions.requestedAt))
      .limit(1),
  );
  return db
    .with(latest)
    .select(getTableColumns(messages))
    .from(messages)
    .leftJoin(latest, sql`true`)
    .where(
      and(
        eq(messages.sessionPk, sessionPk),
        or(
          // First kept seq: the boundary; with none, the seq after the summary (core's rule); 0 without a compaction.
          and(
            not(messages.summary),
            gte(
              messages.seq,
              sql`coalesce(${latest.boundarySeq}, (select max(s.seq) + 1 from messages s where s.session_pk = ${sessionPk} and s.id = any(${latest.summaryMessageIds})), 0)`,
            ),
          ),
          sql`${messages.id} = any(coalesce(${latest.summaryMessageIds}, '{}'::text[]))`,
          pinSystemMessages ? and(not(messages.summary), eq(messages.role, 'system')) : sql`false`,
        ),
      ),
    )
    .orderBy(asc(messages.seq));
}
