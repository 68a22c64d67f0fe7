/**
 * Media objects no part refers to any more: their sessions deleted (parts cascade), their parts
 * purged by retention (the URL cleared). The retention job removes them, a tenant at a time, in
 * bounded batches; an object stored or posted again within the grace is spared (its part may
 * not be committed yet, media/store.ts).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';

/** Objects per statement (one statement, one transaction): each row's bytes go with it. */
export const DEFAULT_ORPHAN_BATCH_SIZE = 200;
/** How long an object stored or posted again is spared: longer than any append takes. */
export const ORPHAN_GRACE_MS = 60 * 60 * 1000;

/** Whose objects, and stored before when. */
export interface OrphanScope {
  tenantId: string;
  /** Only objects last stored before this instant are removed (now less {@link ORPHAN_GRACE_MS}). */
  storedBefore: Date;
}

/** What the collector removed (or, dry, would remove). */
export interface OrphanReport {
  objects: number;
  bytes: number;
}

/**
 * Object `o` is an orphan of its tenant: no file part of any of the tenant's sessions refers to
 * its hash (one lookup of `parts_media_sha_idx` per object, migration 0028), and it is older
 * than the grace. Another tenant's reference to the same bytes is its own object, not this one.
 */
function isOrphan(storedBefore: Date): SQL {
  // A subquery with `limit` is looked up per object, never turned into an anti join (which
  // sorted every reference of every tenant for a batch of 200), and each referring part's
  // session is read by key (a join hashed all of the tenant's sessions once per object).
  return sql`o.stored_at < ${storedBefore.toISOString()}::timestamptz and (
    select 1 from parts p
    where substr(p.url, 24, 64) = o.sha256 and p.type = 'file' and p.url like 'compactor-media:%'
      and (select s.tenant_id from sessions s where s.pk = p.session_pk) = o.tenant_id
    limit 1) is null`;
}

/** Dry run: how many of the tenant's objects (and bytes) the collector would remove now. */
export async function countOrphanMedia(db: DbOrTx, scope: OrphanScope): Promise<OrphanReport> {
  const { rows } = await db.execute<{ objects: string; bytes: string }>(sql`
    select count(*) as objects, coalesce(sum(o.size_bytes), 0) as bytes from media_objects o
    where o.tenant_id = ${scope.tenantId} and ${isOrphan(scope.storedBefore)}`);
  return { objects: Number(rows[0]?.objects ?? 0), bytes: Number(rows[0]?.bytes ?? 0) };
}

/** How {@link deleteOrphanMedia} runs: batch size and a progress callback per committed batch. */
export interface OrphanOptions {
  batchSize?: number;
  onBatch?: (batch: OrphanReport) => void;
}

/**
 * Removes the tenant's orphaned objects, `batchSize` a statement, walking its objects in hash
 * order from where the previous batch ended (each statement reads one batch's range, never the
 * whole table again). Rows an append is stamping right now are skipped (`skip locked`): they are
 * being posted again. Returns what it removed.
 */
export async function deleteOrphanMedia(
  db: DbOrTx,
  scope: OrphanScope,
  options: OrphanOptions = {},
): Promise<OrphanReport> {
  const batchSize = options.batchSize ?? DEFAULT_ORPHAN_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError('batchSize must be a positive integer');
  const total: OrphanReport = { objects: 0, bytes: 0 };
  for (let after = ''; ;) {
    const { rows } = await db.execute<{
      objects: string;
      bytes: string;
      scanned: string;
      last: string | null;
    }>(sql`
      with scanned as (
        select o.sha256 from media_objects o
        where o.tenant_id = ${scope.tenantId} and o.sha256 > ${after}
        order by o.sha256 limit ${batchSize}
      ),
      batch as (
        select o.tenant_id, o.sha256 from media_objects o
        where o.tenant_id = ${scope.tenantId} and o.sha256 in (select sha256 from scanned)
          and ${isOrphan(scope.storedBefore)}
        for update skip locked
      ),
      deleted as (
        delete from media_objects o using batch b
        where o.tenant_id = b.tenant_id and o.sha256 = b.sha256
        returning o.size_bytes
      )
      select (select count(*) from deleted) as objects,
             (select coalesce(sum(size_bytes), 0) from deleted) as bytes,
             (select count(*) from scanned) as scanned,
             (select max(sha256) from scanned) as last`);
    const row = rows[0];
    const batch = { objects: Number(row?.objects ?? 0), bytes: Number(row?.bytes ?? 0) };
    if (batch.objects > 0) {
      total.objects += batch.objects;
      total.bytes += batch.bytes;
      options.onBatch?.(batch);
    }
    if (Number(row?.scanned ?? 0) < batchSize || !row?.last) break;
    after = row.last;
  }
  return total;
}
