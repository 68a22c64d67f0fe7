import { sql, type SQL } from 'drizzle-orm';
import type { Db, DbOrTx } from '../client';
import type { SessionRow } from '../mappers';
import { executePipelined } from '../pipeline';
import { executePrepared } from '../prepared';
import { sessions } from '../schema';
import { rowMapper, selectList } from './raw-rows';
import { toolCallOwnersOf, toolCallOwnersSql, type ToolCallOwner } from './tool-call-owners';

/**
 * The drop-in endpoints' hash chain (`conversation_links`): the lookup of the session a request
 * continues, the session's newest link, and the writes of links.
 */

/** Where a request's chain meets a stored one: the session and the position of the last shared element. */
export interface ChainMatch {
  sessionPk: number;
  position: number;
  /** That session's newest link (its chain's end), read with the match: one primary-key step more. */
  end: ConversationLinkRow;
}

/** How many of a request's newest hashes the first probe tries: a usual request adds a few messages. */
export const NEWEST_PROBES = 16;

/**
 * The longest stored prefix of a request's chain within its tenant: the highest position whose
 * hash is one of `hashes` (the request's chain hashes in order), of the newest session holding
 * it; restricted to `conversationKey`'s sessions when it is not null. Never a read of the stored
 * history (docs/plans/conversation-links-100k.txt): first the newest {@link NEWEST_PROBES}
 * hashes, one index entry each, newest first (the request that extends its chain by a few
 * messages stops there); else a binary search over the rest, which is sound because a stored
 * hash implies every earlier one of the request (the session holding it holds its prefix).
 */
export async function longestChainMatch(
  db: DbOrTx,
  tenantId: string,
  conversationKey: string | null,
  hashes: Buffer[],
): Promise<ChainMatch | null> {
  if (hashes.length === 0) return null;
  const newest = hashes.slice(-NEWEST_PROBES).reverse();
  const first = await executePrepared<MatchRow>(
    db,
    withChainEnd(newestProbesSql(tenantId, conversationKey, newest)),
  );
  if (first.rows[0]) return matchOf(first.rows[0]);
  const rest = hashes.slice(0, hashes.length - newest.length);
  if (rest.length === 0) return null;
  const searched = await executePrepared<MatchRow>(
    db,
    withChainEnd(prefixSearchSql(tenantId, conversationKey, rest)),
  );
  return searched.rows[0] ? matchOf(searched.rows[0]) : null;
}

/**
 * `X-Compactor-Session`'s session and {@link longestChainMatch} under its key, the session read
 * and the match's first probe in one round trip (the binary search, when that probe finds
 * nothing, in a second). No match is searched for a session that does not exist. `ownersOf`:
 * call ids whose owners in that session ({@link findToolCallOwners}) are read in the same round
 * trip (`owners`, empty without the session).
 */
export async function namedSessionChainMatch(
  db: Db,
  tenantId: string,
  sessionId: string,
  hashes: Buffer[],
  ownersOf: string[] = [],
): Promise<{ session: SessionRow | null; match: ChainMatch | null; owners: Map<string, ToolCallOwner> }> {
  if (hashes.length === 0) return { session: null, match: null, owners: new Map() };
  const newest = hashes.slice(-NEWEST_PROBES).reverse();
  const namedPk = sql`(select pk from sessions where tenant_id = ${tenantId} and id = ${sessionId})`;
  const [named, probed, owned] = await executePipelined<Record<string, unknown>>(db, [
    sql`select ${namedSessionColumns} from sessions s where s.tenant_id = ${tenantId} and s.id = ${sessionId}`,
    withChainEnd(newestProbesSql(tenantId, sessionId, newest)),
    ...(ownersOf.length > 0 ? [toolCallOwnersSql(namedPk, ownersOf)] : []),
  ]);
  const session = named!.rows[0] ? namedSessionFromRow(named!.rows[0]) : null;
  const owners = toolCallOwnersOf(owned?.rows ?? []);
  if (!session) return { session, match: null, owners };
  if (probed!.rows[0]) return { session, match: matchOf(probed!.rows[0] as MatchRow), owners };
  const rest = hashes.slice(0, hashes.length - newest.length);
  if (rest.length === 0) return { session, match: null, owners };
  const searched = await executePrepared<MatchRow>(
    db,
    withChainEnd(prefixSearchSql(tenantId, sessionId, rest)),
  );
  return { session, match: searched.rows[0] ? matchOf(searched.rows[0]) : null, owners };
}

const namedSessionColumns = selectList(sessions, 's', '');
const namedSessionFromRow = rowMapper(sessions, '');

/** A match (at most one row) with its session's newest link, which the caller reads next anyway. */
export function withChainEnd(match: SQL): SQL {
  return sql`select m.session_pk, m.position, e.position as end_position, e.chain_hash, e.message_id,
               e.answer, e.raw_answer, e.created_at
        from (${match}) m
        cross join lateral (
          select position, chain_hash, message_id, answer, raw_answer, created_at
          from conversation_links where session_pk = m.session_pk
          order by position desc limit 1) e`;
}

const scopeOf = (conversationKey: string | null) =>
  conversationKey === null ? sql`` : sql` and c.conversation_key = ${conversationKey}`;

/** The first probe: `hashes` in the order given (newest first), stopping at the first stored one. */
export function newestProbesSql(tenantId: string, conversationKey: string | null, hashes: Buffer[]): SQL {
  // The ordered subquery is never flattened, so the nested loop walks it in order.
  return sql`select l.session_pk, l.position
        from (select hash, n from unnest(${sql.param(hashes)}::bytea[]) with ordinality as u(hash, n) order by n) h
        cross join lateral (
          select c.session_pk, c.position from conversation_links c
          where c.tenant_id = ${tenantId}${scopeOf(conversationKey)} and c.chain_hash = h.hash
          order by c.session_pk desc limit 1) l
        limit 1`;
}

/** The binary search for the longest stored prefix of `hashes` (in request order). */
export function prefixSearchSql(tenantId: string, conversationKey: string | null, hashes: Buffer[]): SQL {
  const scope = scopeOf(conversationKey);
  // Invariant: hs[1..lo] are stored, hs[hi+1..] are not; each step probes one index entry
  // (`offset 0` keeps the probe one subquery: inlined, each use of `found` would probe again).
  return sql`with recursive req as materialized (select ${sql.param(hashes)}::bytea[] as hs),
        bounds(lo, hi) as (
          select 0, cardinality(hs) from req
          union all
          select case when p.found then (b.lo + b.hi) / 2 + 1 else b.lo end,
                 case when p.found then b.hi else (b.lo + b.hi) / 2 end
          from bounds b cross join req
          cross join lateral (
            select exists (
              select 1 from conversation_links c
              where c.tenant_id = ${tenantId}${scope} and c.chain_hash = req.hs[(b.lo + b.hi) / 2 + 1]) as found
            offset 0) p
          where b.lo < b.hi)
        select l.session_pk, l.position
        from bounds b cross join req
        cross join lateral (
          select c.session_pk, c.position from conversation_links c
          where c.tenant_id = ${tenantId}${scope} and c.chain_hash = req.hs[b.lo]
          order by c.session_pk desc limit 1) l
        where b.lo >= b.hi and b.lo > 0`;
}

interface MatchRow extends LinkRow {
  end_position: number;
}

const matchOf = (row: MatchRow): ChainMatch => ({
  sessionPk: Number(row.session_pk),
  position: row.position,
  end: linkOf({ ...row, position: row.end_position }),
});

interface LinkRow extends Record<string, unknown> {
  session_pk: string | number;
  position: number;
  chain_hash: Buffer;
  message_id: string | null;
  answer: boolean;
  raw_answer: unknown;
  created_at: Date | string;
}

const linkOf = (row: LinkRow): ConversationLinkRow => ({
  sessionPk: Number(row.session_pk),
  position: row.position,
  chainHash: row.chain_hash,
  messageId: row.message_id,
  answer: row.answer,
  rawAnswer: row.raw_answer,
  createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
});

/** A stored link, as the conversation store reads it. */
export interface ConversationLinkRow {
  sessionPk: number;
  position: number;
  chainHash: Buffer;
  messageId: string | null;
  answer: boolean;
  rawAnswer: unknown;
  createdAt: Date;
}

/** The session's newest link (its chain's end), or null: one backward step of the primary key. */
export async function lastConversationLink(
  db: DbOrTx,
  sessionPk: number,
): Promise<ConversationLinkRow | null> {
  const { rows } = await executePrepared<LinkRow>(
    db,
    sql`select session_pk, position, chain_hash, message_id, answer, raw_answer, created_at
        from conversation_links where session_pk = ${sessionPk}
        order by position desc limit 1`,
  );
  return rows[0] ? linkOf(rows[0]) : null;
}

/** Whether the session's chain has an element at `position` (a primary-key probe). */
export async function conversationLinkAt(db: DbOrTx, sessionPk: number, position: number): Promise<boolean> {
  const { rows } = await executePrepared(
    db,
    sql`select 1 from conversation_links where session_pk = ${sessionPk} and position = ${position}`,
  );
  return rows.length > 0;
}

/** What storing an answer at `position` finds: the position linked, the session there, the message stored. */
export interface AnswerSlot {
  linked: boolean;
  sessionExists: boolean;
  messageStored: boolean;
}

/** {@link AnswerSlot} in one round trip: three primary-key or unique-index probes. */
export async function answerSlot(
  db: DbOrTx,
  sessionPk: number,
  position: number,
  messageId: string,
): Promise<AnswerSlot> {
  const { rows } = await executePrepared<{
    linked: boolean;
    session_exists: boolean;
    message_stored: boolean;
  }>(
    db,
    sql`select
          exists (select 1 from conversation_links where session_pk = ${sessionPk} and position = ${position}) as linked,
          exists (select 1 from sessions where pk = ${sessionPk}) as session_exists,
          exists (select 1 from messages where session_pk = ${sessionPk} and id = ${messageId}) as message_stored`,
  );
  const row = rows[0]!;
  return { linked: row.linked, sessionExists: row.session_exists, messageStored: row.message_stored };
}

/** A link to write: the element at `position` with the chain hash up to it. */
export interface NewConversationLink {
  position: number;
  chainHash: Buffer;
  messageId: string | null;
}

/**
 * Links elements into a session's chain; a position already linked keeps its row (a retried or
 * concurrent request writes the same links). `answer` marks them as the upstream's answer and
 * keeps its raw body for an identical retry. `clearRawAnswerAt` drops, in the same statement, the
 * raw answer kept at that earlier position ({@link clearStoredAnswer}): the chain moves past it.
 * Answers the positions this call inserted.
 */
export async function insertConversationLinks(
  db: DbOrTx,
  target: { sessionPk: number; tenantId: string; conversationKey: string | null },
  links: NewConversationLink[],
  options: { now: Date; rawAnswer?: unknown; clearRawAnswerAt?: number | null },
): Promise<number[]> {
  if (links.length === 0) return [];
  const answer = options.rawAnswer !== undefined;
  const clearAt = options.clearRawAnswerAt ?? null;
  const clearing =
    clearAt === null
      ? sql``
      : sql`with cleared as (
          update conversation_links set raw_answer = null
          where session_pk = ${target.sessionPk} and position = ${clearAt} and raw_answer is not null)
        `;
  const result = await db.execute<{ position: number }>(
    sql`${clearing}insert into conversation_links
          (session_pk, position, tenant_id, chain_hash, conversation_key, message_id, answer, raw_answer, created_at)
        select ${target.sessionPk}, l.position, ${target.tenantId}, l.chain_hash, ${target.conversationKey},
               l.message_id, ${answer}, ${answer ? storableJson(options.rawAnswer) : null}::jsonb, ${options.now}
        from unnest(${sql.param(links.map((l) => l.position))}::int[],
                    ${sql.param(links.map((l) => l.chainHash))}::bytea[],
                    ${sql.param(links.map((l) => l.messageId))}::text[]) as l(position, chain_hash, message_id)
        on conflict (session_pk, position) do nothing
        returning position`,
  );
  return result.rows.map((r) => r.position);
}

/**
 * Gives the link at `position` the client's hash of it: the client echoed the stored answer
 * there in a form of its own (the same calls or text), so later requests chain from its form.
 */
export async function rehashConversationLink(
  db: DbOrTx,
  sessionPk: number,
  position: number,
  chainHash: Buffer,
): Promise<void> {
  await db.execute(
    sql`update conversation_links set chain_hash = ${chainHash}
        where session_pk = ${sessionPk} and position = ${position}`,
  );
}

/** Drops the raw answer kept at `position`: the chain moved past it, so no retry can ask for it again. */
export async function clearStoredAnswer(db: DbOrTx, sessionPk: number, position: number): Promise<void> {
  await db.execute(
    sql`update conversation_links set raw_answer = null
        where session_pk = ${sessionPk} and position = ${position} and raw_answer is not null`,
  );
}

/**
 * JSON that jsonb takes: Postgres refuses the NUL character in jsonb strings, which a provider's
 * text may carry; it becomes U+FFFD in the kept copy (the stored message has its own rules).
 */
function storableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === 'string' ? item.replaceAll('\u0000', '\uFFFD') : item,
  );
}

/** Which of `ids` the session already stores (one probe of `messages_session_id_uq` each). */
export async function storedMessageIds(db: DbOrTx, sessionPk: number, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const result = await db.execute<{ id: string }>(
    sql`select id from messages where session_pk = ${sessionPk} and id = any(${sql.param(ids)}::text[])`,
  );
  return new Set(result.rows.map((r) => r.id));
}
