/**
 * Media objects in Postgres, per tenant by SHA-256. The one interface an object store would also
 * implement: store what is missing, load by hash.
 */
import { and, eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { mediaObjects } from '../schema';
import type { MediaObjectInput } from './references';

/** A stored object as reads need it. */
export interface StoredMediaObject {
  sha256: string;
  mime: string;
  data: Uint8Array;
}

/**
 * Stores the objects the tenant does not hold yet. The hashes are looked up first, so a
 * screenshot posted again sends its bytes to the database once; a concurrent insert of the same
 * object is a no-op (`on conflict do nothing`).
 */
export async function storeMediaObjects(
  db: DbOrTx,
  tenantId: string,
  objects: MediaObjectInput[],
): Promise<number> {
  const unique = new Map(objects.map((o) => [o.sha256, o]));
  if (unique.size === 0) return 0;
  const held = await db
    .select({ sha256: mediaObjects.sha256 })
    .from(mediaObjects)
    .where(and(eq(mediaObjects.tenantId, tenantId), inArray(mediaObjects.sha256, [...unique.keys()])));
  for (const row of held) unique.delete(row.sha256);
  if (unique.size === 0) return 0;
  const rows = [...unique.values()].map((o) => ({
    tenantId,
    sha256: o.sha256,
    mime: o.mime,
    sizeBytes: o.data.byteLength,
    width: o.width,
    height: o.height,
    pages: o.pages,
    data: o.data,
  }));
  const inserted = await db
    .insert(mediaObjects)
    .values(rows)
    .onConflictDoNothing()
    .returning({ sha256: mediaObjects.sha256 });
  return inserted.length;
}

/** The tenant's objects of these hashes (those it holds), by hash. */
export async function loadMediaObjects(
  db: DbOrTx,
  tenantId: string,
  hashes: readonly string[],
): Promise<Map<string, StoredMediaObject>> {
  const found = new Map<string, StoredMediaObject>();
  if (hashes.length === 0) return found;
  const rows = await db
    .select({ sha256: mediaObjects.sha256, mime: mediaObjects.mime, data: mediaObjects.data })
    .from(mediaObjects)
    .where(and(eq(mediaObjects.tenantId, tenantId), inArray(mediaObjects.sha256, [...new Set(hashes)])));
  for (const row of rows) found.set(row.sha256, row);
  return found;
}
