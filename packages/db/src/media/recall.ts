/**
 * Recall of a media part by the id its marker names (core `mediaMarker`: the first 16 hex
 * digits of the bytes' SHA-256): the newest part of the session that refers to it, and the
 * bytes, read from the tenant's own objects only.
 */
import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';

/** A media part found by id, with its stored object. */
export interface RecalledMedia {
  sha256: string;
  messageId: string;
  seq: number;
  callId: string | null;
  mime: string;
  filename: string | null;
  tokens: number;
  data: Uint8Array;
  width: number | null;
  height: number | null;
}

const REFERENCE_PREFIX = 'compactor-media:sha256:';

/**
 * The newest file part of session `sessionPk` whose reference starts with `idPrefix` (lowercase
 * hex, checked by the contract), joined to tenant `tenantId`'s object of that hash; null when
 * no part names it or the tenant holds no such object (the session is the caller's to check).
 *
 * The parts are found by `parts_media_sha_idx` (migration 0028: the hash inside a reference, of
 * file parts holding one): a range of its expression, the hashes from `idPrefix` up to
 * `idPrefix` followed by `g`, the first letter after the hex digits (in any collation digits and
 * a–f sort before it), under the index's own predicate. It reads the references to those bytes,
 * every session's, not the session's history; the session and the exact `like` are checked on
 * them. The index's expression and predicate are spelled as migration 0028 spells them: any
 * other spelling is not matched to it. `substr(url, 24, 64)`: the hash after {@link REFERENCE_PREFIX}.
 */
export async function findRecallMedia(
  db: DbOrTx,
  tenantId: string,
  sessionPk: number,
  idPrefix: string,
): Promise<RecalledMedia | null> {
  if (!/^[0-9a-f]{1,64}$/.test(idPrefix)) return null;
  const { rows } = await db.execute<{
    sha256: string;
    message_id: string;
    seq: number;
    call_id: string | null;
    mime: string;
    filename: string | null;
    tokens: number;
    data: Uint8Array;
    width: number | null;
    height: number | null;
  }>(sql`
    select o.sha256, m.id as message_id, p.seq, p.text as call_id, p.mime, p.filename, p.tokens,
           o.data, o.width, o.height
    from parts p
    join messages m on m.pk = p.message_pk
    join media_objects o on o.tenant_id = ${tenantId} and o.sha256 = substr(p.url, 24, 64)
    where substr(p.url, 24, 64) >= ${idPrefix} and substr(p.url, 24, 64) < ${`${idPrefix}g`}
      and p.type = 'file' and p.url like 'compactor-media:%'
      and p.url like ${`${REFERENCE_PREFIX}${idPrefix}%`} and p.session_pk = ${sessionPk}
    order by p.seq desc, p.idx desc
    limit 1`);
  const row = rows[0];
  if (!row) return null;
  return {
    sha256: row.sha256,
    messageId: row.message_id,
    seq: row.seq,
    callId: row.call_id,
    mime: row.mime,
    filename: row.filename,
    tokens: row.tokens,
    data: row.data,
    width: row.width,
    height: row.height,
  };
}
