import { and, asc, eq, gt } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { MessageRow } from '../mappers';
import { messages } from '../schema';

/** A `messages` row to insert; build one with `messageToRow`. */
export type NewMessageRow = typeof messages.$inferInsert;

/** A stored message's identity and content hash, for the idempotent-append check. */
export interface ExistingMessageRef {
  pk: number;
  id: string;
  seq: number;
  contentHash: string;
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
