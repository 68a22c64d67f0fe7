import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import { servedPartTokensSql, viewPartsLateral } from './context-tokens';
import { viewBoundsCte, viewMessagesSql } from './view-bounds';

/** A part's place in the store: its message seq and its position in that message. */
export interface PartPosition {
  seq: number;
  idx: number;
}

/** What a change to the served context is measured against (core `cacheEffect`). */
export interface CacheBaseline {
  /** The view's stored tokens now (a pruned output counts as its marker). */
  storedTokens: number;
  /** The part of it in pinned system messages: what a compaction that moves the boundary keeps at the head. */
  pinnedTokens: number;
  /**
   * Tokens the view serves before the first changed part (the parts `prunedBy` marked, or
   * `changedFrom`): pinned messages, the summary, then every kept part before it, those of its
   * own message included. Null when no part of the view changed.
   */
  prefixTokens: number | null;
  /** What the view's parts marked by `prunedBy` weigh less than they did unpruned. */
  prunedSavedTokens: number;
  /**
   * The latest usage report of the view (an assistant turn's, not a summary's): the prompt
   * tokens the provider read from or wrote to its cache, and when the turn was stored.
   */
  lastUsage: { cachedTokens: number; at: Date } | null;
}

export interface CacheBaselineOptions {
  pinSystemMessages: boolean;
  /** The compaction or prune job whose marks (`part_prunes.compacted_by`) changed the view. */
  prunedBy?: string | null;
  /** Another change's first part (a clamp), when it may come before the first mark. */
  changedFrom?: PartPosition | null;
}

/**
 * The sums a change's cache effect needs, in one statement over the context view: bounded like
 * the status statement (index scans from the boundary, one probe of `part_prunes` per part),
 * never a scan of the session's history. The view's order is pinned messages, the summary, then
 * kept messages by seq: pinned messages lie before the boundary, so every non-summary message
 * of the view comes in seq order, and the summary before all kept ones.
 */
export async function selectCacheBaseline(
  db: DbOrTx,
  sessionPk: number,
  options: CacheBaselineOptions,
): Promise<CacheBaseline> {
  const { rows } = await executePrepared<Record<string, unknown>>(db, cacheBaselineSql(sessionPk, options));
  const row = rows[0];
  if (!row) throw new Error('the cache baseline returned no row');
  const int = (key: string) => Number(row[key] ?? 0);
  return {
    storedTokens: int('stored_tokens'),
    pinnedTokens: int('pinned_tokens'),
    prefixTokens: row.changed === true ? int('prefix_tokens') : null,
    prunedSavedTokens: int('pruned_saved_tokens'),
    lastUsage:
      row.usage_at === null
        ? null
        : { cachedTokens: int('cached_tokens'), at: new Date(row.usage_at as string | Date) },
  };
}

function cacheBaselineSql(sessionPk: number, options: CacheBaselineOptions): SQL {
  const { pinSystemMessages } = options;
  const prunedBy = options.prunedBy ?? null;
  const changedSeq = options.changedFrom?.seq ?? null;
  const changedIdx = options.changedFrom?.idx ?? null;
  return sql`
    with bounds as (${viewBoundsCte(sessionPk)}),
    view as materialized (${viewMessagesSql(
      sessionPk,
      pinSystemMessages,
      sql`m.pk, m.seq, m.role, m.summary, m.created_at, m.usage_input, m.usage_cache_read, m.usage_cache_write`,
    )}),
    -- Each part as the model sees it (as the status statement counts it), and whose mark it carries.
    view_parts as materialized (
      select v.seq, v.summary,
             ${pinSystemMessages}::boolean and v.role = 'system' and not v.summary as pinned,
             p.idx, p.compacted_by, p.tokens as unpruned, ${servedPartTokensSql('compacted_by')} as effective
      from view v
      ${viewPartsLateral(sessionPk, 'compacted_by')}
    ),
    first_changed as (
      select f.seq, f.idx from (
        select p.seq, p.idx from view_parts p
        where p.compacted_by = ${prunedBy}::text and not p.summary and not p.pinned
        union all
        select ${changedSeq}::int, ${changedIdx}::int where ${changedSeq}::int is not null
      ) f
      order by f.seq, f.idx limit 1
    ),
    report as (
      select v.created_at,
             coalesce(v.usage_cache_read, 0)::bigint + coalesce(v.usage_cache_write, 0) as cached_tokens
      from view v
      where v.role = 'assistant' and not v.summary and v.usage_input is not null
      order by v.seq desc limit 1
    )
    select
      (select coalesce(sum(effective), 0) from view_parts) as stored_tokens,
      (select coalesce(sum(effective), 0) from view_parts where pinned) as pinned_tokens,
      (select coalesce(sum(p.effective), 0) from view_parts p, first_changed f
        where p.pinned or p.summary or (p.seq, p.idx) < (f.seq, f.idx)) as prefix_tokens,
      exists (select 1 from first_changed) as changed,
      (select coalesce(sum(p.unpruned - p.effective), 0) from view_parts p
        where p.compacted_by = ${prunedBy}::text) as pruned_saved_tokens,
      (select created_at from report) as usage_at,
      (select cached_tokens from report) as cached_tokens
  `;
}
