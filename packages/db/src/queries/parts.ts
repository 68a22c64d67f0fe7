import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { NewPartRow, PartRow } from '../mappers';
import { messages, parts } from '../schema';

/** Inserts part rows; callers keep a batch under Postgres' 65,535 bind parameters (~1,000 rows). */
export async function insertParts(db: DbOrTx, rows: NewPartRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insert(parts).values(rows);
}

/** All parts of these messages, in message then position order. */
export async function listPartsOfMessages(db: DbOrTx, messagePks: number[]): Promise<PartRow[]> {
  if (messagePks.length === 0) return [];
  return db
    .select()
    .from(parts)
    .where(inArray(parts.messagePk, messagePks))
    .orderBy(asc(parts.messagePk), asc(parts.idx));
}

/** Tool-part columns a PATCH may change; recount `tokens` and `outputTokens` along with the output. */
export type ToolPartPatch = Partial<
  Pick<NewPartRow, 'toolStatus' | 'toolInput' | 'toolOutput' | 'toolError' | 'tokens' | 'outputTokens'>
>;

/** Updates a part row by pk, unchecked: `patchMessage` decides what may change. */
export async function updatePart(db: DbOrTx, pk: number, patch: ToolPartPatch): Promise<void> {
  await db.update(parts).set(patch).where(eq(parts.pk, pk));
}

/** A tool part to prune, addressed by its message's seq and its call id (core's `PrunablePart` has both). */
export interface PartRef {
  seq: number;
  callId: string;
}

/**
 * Prunes tool outputs in one set-based statement (lazy deletion: the output stays stored).
 * Parts already pruned are left alone, so repeating the statement is harmless. Returns how
 * many parts it marked and the output tokens that no longer reach the model.
 */
export async function markPartsCompacted(
  db: DbOrTx,
  sessionPk: number,
  refs: PartRef[],
  { at, by }: { at: Date; by: string },
): Promise<{ parts: number; tokens: number }> {
  if (refs.length === 0) return { parts: 0, tokens: 0 };
  const updated = await db
    .update(parts)
    .set({ compactedAt: at, compactedBy: by })
    .where(
      and(
        eq(parts.sessionPk, sessionPk),
        eq(parts.type, 'tool'),
        // Only a finished output can be cleared; an errored or unfinished call has none.
        eq(parts.toolStatus, 'completed'),
        isNull(parts.compactedAt),
        sql`(${parts.seq}, ${parts.callId}) in (select * from unnest(${sql.param(refs.map((r) => r.seq))}::int[], ${sql.param(refs.map((r) => r.callId))}::text[]))`,
      ),
    )
    .returning({ outputTokens: parts.outputTokens });
  return { parts: updated.length, tokens: updated.reduce((sum, r) => sum + r.outputTokens, 0) };
}

/** Tool calls of the session still pending or running, among these call ids, with their message. */
export async function findUnfinishedToolCalls(
  db: DbOrTx,
  sessionPk: number,
  callIds: string[],
): Promise<Array<{ callId: string; messageId: string; tool: string; input: unknown }>> {
  if (callIds.length === 0) return [];
  const rows = await db
    .select({ callId: parts.callId, messageId: messages.id, tool: parts.tool, input: parts.toolInput })
    .from(parts)
    .innerJoin(messages, eq(messages.pk, parts.messagePk))
    .where(
      and(
        eq(parts.sessionPk, sessionPk),
        inArray(parts.callId, callIds),
        inArray(parts.toolStatus, ['pending', 'running']),
      ),
    );

  return rows.map((r) => ({
    callId: r.callId ?? '',
    messageId: r.messageId,
    tool: r.tool ?? '',
    input: r.input,
  }));
}
