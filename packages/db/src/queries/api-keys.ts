import { and, asc, eq, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { apiKeys } from '../schema';

/** An `api_keys` row: it holds the key's SHA-256 hash, never the key itself. */
export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** Stores a key the keys CLI generated (its hash only); a hash already stored violates `api_keys_hash_uq`. */
export async function insertApiKey(db: DbOrTx, row: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
  const [inserted] = await db.insert(apiKeys).values(row).returning();
  if (!inserted) throw new Error('api key insert returned nothing');
  return inserted;
}

/** The tenant behind a key, by the key's hash; revoked keys are not found. */
export async function findActiveApiKeyByHash(db: DbOrTx, keyHash: string): Promise<ApiKeyRow | null> {
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)));
  return row ?? null;
}

/** Whether any key is live: with none here and none in API_KEYS, the API runs open. */
export async function hasActiveApiKeys(db: DbOrTx): Promise<boolean> {
  const rows = await db.select({ id: apiKeys.id }).from(apiKeys).where(isNull(apiKeys.revokedAt)).limit(1);
  return rows.length > 0;
}

/** Marks a key revoked at `at`; `false` when the id is unknown or the key was already revoked. */
export async function revokeApiKey(db: DbOrTx, id: string, at: Date): Promise<boolean> {
  const rows = await db
    .update(apiKeys)
    .set({ revokedAt: at })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return rows.length > 0;
}

/** Every key, revoked ones included, by tenant then creation time (the keys CLI's listing). */
export async function listApiKeys(db: DbOrTx): Promise<ApiKeyRow[]> {
  return db.select().from(apiKeys).orderBy(asc(apiKeys.tenantId), asc(apiKeys.createdAt));
}
