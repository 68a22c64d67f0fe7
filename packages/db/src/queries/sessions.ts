import { eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { SessionRow } from '../mappers';
import { executePrepared } from '../prepared';
import { rowMapper, selectList } from './raw-rows';
import { partPrunes, sessions } from '../schema';

/** A `sessions` row to insert; `policy` is the client's policy input, resolved on use. */
export type NewSessionRow = typeof sessions.$inferInsert;

/** Inserts a session; returns `null` when `(tenant, id)` is already taken (the caller compares). */
export async function insertSession(db: DbOrTx, row: NewSessionRow): Promise<SessionRow | null> {
  const [inserted] = await db.insert(sessions).values(row).onConflictDoNothing().returning();
  return inserted ?? null;
}

const sessionColumns = selectList(sessions, 's', '');
/** A `sessions` row selected with `selectList(sessions, alias, '')` (or as JSON), as drizzle maps it. */
export const sessionFromRow = rowMapper(sessions, '');

/** A tenant's session by its client id, or `null`; ids are unique per tenant only. */
export async function findSession(db: DbOrTx, tenantId: string, id: string): Promise<SessionRow | null> {
  // Every request starts here: a prepared statement (see executePrepared).
  const { rows } = await executePrepared(
    db,
    sql`select ${sessionColumns} from sessions s where s.tenant_id = ${tenantId} and s.id = ${id}`,
  );
  return rows[0] ? sessionFromRow(rows[0]) : null;
}

/** Columns `PATCH /sessions/:id` may change: the model fields (cache overrides too), the policy input and metadata. */
export type SessionPatch = Partial<
  Pick<
    NewSessionRow,
    | 'modelId'
    | 'provider'
    | 'contextWindow'
    | 'maxOutputTokens'
    | 'inputLimit'
    | 'modelPricing'
    | 'modelCache'
    | 'policy'
    | 'metadata'
  >
>;

/** Updates a session and bumps `updatedAt`; `null` when the row is gone. */
export async function updateSession(db: DbOrTx, pk: number, patch: SessionPatch): Promise<SessionRow | null> {
  const [row] = await db
    .update(sessions)
    .set({ ...patch, updatedAt: sql`now()` })
    .where(eq(sessions.pk, pk))
    .returning();
  return row ?? null;
}

/**
 * Deletes a session with its messages, parts and compactions (cascade) and its prune marks
 * (`part_prunes` has no foreign key, see there), in one transaction.
 */
export async function deleteSession(db: DbOrTx, pk: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.delete(partPrunes).where(eq(partPrunes.sessionPk, pk));
    const rows = await tx.delete(sessions).where(eq(sessions.pk, pk)).returning({ pk: sessions.pk });
    return rows.length > 0;
  });
}

/** A session by its internal key (workers hold the key, not the tenant's id). */
export async function findSessionByPk(db: DbOrTx, pk: number): Promise<SessionRow | null> {
  // Every prune job starts here: a prepared statement (see executePrepared).
  const { rows } = await executePrepared(
    db,
    sql`select ${sessionColumns} from sessions s where s.pk = ${pk}`,
  );
  return rows[0] ? sessionFromRow(rows[0]) : null;
}
