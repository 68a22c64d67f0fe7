import { sql, type SQL } from 'drizzle-orm';
import type { Usage } from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import type { PartPosition } from './cache-baseline';
import { servedPartTokensSql, viewPartsLateral } from './context-tokens';
import { viewBoundsCte } from './view-bounds';

/** Kept messages read per statement while the head of the view is walked. */
export const CACHE_HEAD_BATCH = 256;

/** The latest usage report of the view (an assistant turn's, not a summary's). */
export interface CacheReport {
  seq: number;
  usage: Usage;
  /** The prompt tokens the provider read from or wrote to its cache for that turn. */
  cachedTokens: number;
  at: Date;
}

/**
 * What a change's cache effect needs of the view, read without its history: the provider caches
 * at most the prompt its last usage report measured, so only that many tokens at the view's head
 * can still be served from the cache, and the effect of a change depends on the view only up
 * to there (core `cacheEffect`: what is kept is `min(cached, prefix)`, what was live
 * `min(cached, before)`).
 */
export interface CacheHead {
  report: CacheReport | null;
  /** Tokens of the view's system messages when pinned (those a moved boundary keeps at the head). */
  pinnedTokens: number;
  /**
   * Served tokens before the first changed part (a part `prunedBy` marked, or from `changedFrom`
   * on): exact when the change lies within the walked head, else the walked total, which is
   * past the cached tokens (all the effect can use). Null when the whole view was walked and
   * nothing changed.
   */
  prefixTokens: number | null;
  /** The view's served tokens as they were before the change, walked up to the cached tokens. */
  headTokens: number;
  /** The walk reached the end of the view: `headTokens` is the whole view's. */
  complete: boolean;
  /**
   * Stored tokens of the kept messages after the report (as before the change): with the
   * report's own count, the size of the served context without reading the history (core's
   * hybrid estimate, less its corrections).
   */
  tokensAfterReport: number;
}

export interface CacheHeadOptions {
  pinSystemMessages: boolean;
  /** The compaction or prune job whose marks (`part_prunes.compacted_by`) changed the view. */
  prunedBy?: string | null;
  /** Another change's first part (a clamp), when it may come before the first mark. */
  changedFrom?: PartPosition | null;
  /** Kept messages per statement of the walk (tests). */
  batch?: number;
}

/**
 * Reads {@link CacheHead}: one statement for the report, the pinned and summary messages and
 * what follows the report (index scans: `messages_session_usage_idx` backwards, the pinned and
 * summary indexes, the seq range after the report), then the kept messages from the first kept
 * seq in batches of {@link CACHE_HEAD_BATCH}, only while a change is sought and the walked tokens
 * are below the report's cached tokens. Each batch is a range of `messages_session_seq_uq`, its
 * parts by `parts_message_idx_uq` and their marks by `part_prunes_pk`: what the cached prompt
 * holds, never the history before or after it.
 */
export async function selectCacheHead(
  db: DbOrTx,
  sessionPk: number,
  options: CacheHeadOptions,
): Promise<CacheHead> {
  const prunedBy = options.prunedBy ?? null;
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    headSql(sessionPk, options.pinSystemMessages, prunedBy),
  );
  const row = rows[0];
  if (!row) throw new Error('the cache head returned no row');
  const int = (key: string) => Number(row[key] ?? 0);
  const report: CacheReport | null =
    row.report_seq === null || row.report_seq === undefined
      ? null
      : {
          seq: int('report_seq'),
          usage: {
            input: int('usage_input'),
            output: int('usage_output'),
            reasoning: int('usage_reasoning'),
            cacheRead: int('usage_cache_read'),
            cacheWrite: int('usage_cache_write'),
          },
          cachedTokens: int('usage_cache_read') + int('usage_cache_write'),
          at: new Date(row.report_at as string | Date),
        };
  const head: CacheHead = {
    report,
    pinnedTokens: int('pinned_tokens'),
    prefixTokens: null,
    headTokens: int('head_tokens'),
    complete: false,
    tokensAfterReport: int('after_report'),
  };
  const changes = prunedBy !== null || (options.changedFrom ?? null) !== null;
  const cap = report?.cachedTokens ?? 0;
  if (!changes) return { ...head, headTokens: Math.min(head.headTokens, cap) };
  const batch = options.batch ?? CACHE_HEAD_BATCH;
  let after = -1;
  while (head.headTokens < cap) {
    const parts = await headBatch(db, sessionPk, {
      after,
      batch,
      prunedBy,
      changedFrom: options.changedFrom,
    });
    let messages = 0;
    for (const part of parts) {
      if (part.seq !== after) messages++;
      after = part.seq;
      if (part.idx === null) continue;
      if (head.prefixTokens === null && part.changed) head.prefixTokens = head.headTokens;
      head.headTokens += Number(part.tokens);
    }
    if (messages < batch) return { ...head, complete: true };
  }
  // Stopped at the cached tokens: whatever changes later lies past what the cache holds.
  return { ...head, prefixTokens: head.prefixTokens ?? head.headTokens };
}

/** A part's tokens as the view served them before the change: `prunedBy`'s marks not yet there. */
function beforeChangeTokens(prunedBy: string | null): SQL {
  return sql`case when p.compacted_by = ${prunedBy}::text then p.tokens::bigint
                  else ${servedPartTokensSql('compacted_by')} end`;
}

function headSql(sessionPk: number, pinSystemMessages: boolean, prunedBy: string | null): SQL {
  const tokens = beforeChangeTokens(prunedBy);
  return sql`
    with bounds as (${viewBoundsCte(sessionPk)}),
    report as (
      select r.* from bounds b cross join lateral (
        select k.seq, k.created_at, k.usage_input, k.usage_output, k.usage_reasoning,
               k.usage_cache_read, k.usage_cache_write
        from messages k
        where k.session_pk = ${sessionPk} and k.usage_input is not null and k.seq >= b.first_kept
          and k.role = 'assistant' and not k.summary
        order by k.seq desc limit 1
      ) r
    ),
    -- The latest compaction's summary messages, served first, and the session's system messages
    -- when pinned: those before the first kept seq are served first too, the others in their
    -- place, and a compaction that moves the boundary keeps them all at the head. A handful, by
    -- the summary ids and the partial \`messages_session_pinned_idx\`.
    head as (
      select v.pk, v.summary, true as at_head from bounds b cross join lateral unnest(b.summary_ids) as s(id)
      cross join lateral (
        select k.pk, k.summary from messages k
        where k.session_pk = ${sessionPk} and k.id = s.id and k.seq > coalesce(b.covers_through_seq, -1)
        offset 0
      ) v
      union all
      select m.pk, m.summary, m.seq < b.first_kept from bounds b join messages m
        on m.session_pk = ${sessionPk} and ${pinSystemMessages}::boolean
           and m.role = 'system' and not m.summary
    ),
    head_parts as (
      select v.summary, v.at_head, ${tokens} as tokens from head v ${viewPartsLateral(sessionPk, 'compacted_by')}
    ),
    after_report as (
      select ${tokens} as tokens
      from report r
      cross join lateral (
        select k.pk from messages k
        where k.session_pk = ${sessionPk} and k.seq > r.seq and not k.summary
        order by k.seq offset 0
      ) v
      ${viewPartsLateral(sessionPk, 'compacted_by')}
    )
    select
      (select coalesce(sum(tokens), 0) from head_parts where not summary) as pinned_tokens,
      (select coalesce(sum(tokens), 0) from head_parts where at_head) as head_tokens,
      (select coalesce(sum(tokens), 0) from after_report) as after_report,
      r.seq as report_seq, r.created_at as report_at, r.usage_input, r.usage_output, r.usage_reasoning,
      r.usage_cache_read, r.usage_cache_write
    from (select 1) one left join report r on true`;
}

interface HeadPart {
  seq: number;
  idx: number | null;
  tokens: string | number;
  changed: boolean;
}

/** The parts of the next `batch` kept messages after seq `after`, in the order the view serves them. */
async function headBatch(
  db: DbOrTx,
  sessionPk: number,
  {
    after,
    batch,
    prunedBy,
    changedFrom,
  }: { after: number; batch: number; prunedBy: string | null; changedFrom?: PartPosition | null },
): Promise<HeadPart[]> {
  const changedSeq = changedFrom?.seq ?? null;
  const changedIdx = changedFrom?.idx ?? null;
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`
    with bounds as (${viewBoundsCte(sessionPk)})
    select v.seq, p.idx, coalesce(${beforeChangeTokens(prunedBy)}, 0) as tokens,
           coalesce(p.compacted_by = ${prunedBy}::text, false)
             or (${changedSeq}::int is not null and (v.seq, p.idx) >= (${changedSeq}::int, ${changedIdx}::int))
             as changed
    from bounds b
    cross join lateral (
      select k.pk, k.seq from messages k
      where k.session_pk = ${sessionPk} and k.seq >= b.first_kept and k.seq > ${after}::int and not k.summary
      order by k.seq limit ${batch}::int
    ) v
    left join lateral (
      select p.* from (select 1) one ${viewPartsLateral(sessionPk, 'compacted_by')}
    ) p on true
    order by v.seq, p.idx`,
  );
  return rows.map((row) => ({
    seq: Number(row.seq),
    idx: row.idx === null ? null : Number(row.idx),
    tokens: row.tokens as string,
    changed: row.changed === true,
  }));
}
