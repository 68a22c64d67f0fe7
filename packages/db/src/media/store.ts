/**
 * Media objects in Postgres, per tenant by SHA-256. The one interface an object store would also
 * implement: store what is missing, load by hash.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
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
 * object is a no-op (`on conflict do nothing`). The lookup stamps `stored_at` on the objects
 * held: the orphan collector (media/orphans.ts) spares recent ones, so an object posted again
 * just as its last reference goes is not removed under the part about to refer to it (the
 * collector's delete waits for this row's lock and then sees the new stamp).
 */
export async function storeMediaObjects(
  db: DbOrTx,
  tenantId: string,
  objects: MediaObjectInput[],
): Promise<number> {
  const unique = new Map(objects.map((o) => [o.sha256, o]));
  if (unique.size === 0) return 0;
  const held = await db
    .update(mediaObjects)
    .set({ storedAt: sql`now()` })
    .where(and(eq(mediaObjects.tenantId, tenantId), inArray(mediaObjects.sha256, [...unique.keys()])))
    .returning({ sha256: mediaObjects.sha256 });
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
