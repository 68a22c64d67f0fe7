import { sql, type SQL } from 'drizzle-orm';
import { recallQueryOf } from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import { viewBoundsCte } from './view-bounds';

/**
 * Recall: what compaction took out of the model's view, read back. Compaction deletes nothing
 * (a pruned output stays in `parts`, a summarized message in the history) until the retention
 * purge clears the text and stamps `purged_at`.
 */

/** A tool call's stored result, as {@link findRecallCall} reads it. */
export interface RecallCallRow {
  callId: string;
  tool: string;
  status: 'completed' | 'error';
  output: string | null;
  error: string | null;
  messageId: string;
  seq: number;
  outputTokens: number;
  prunedAt: Date | null;
  /** When the retention purge cleared its content (then output and error are null). */
  purgedAt: Date | null;
}

/**
 * The session's finished tool call `callId` (completed or failed), or null. Call ids are unique
 * per message, not per session: of several calls with the id, the newest pruned one (the one a
 * cleared marker in the view names), else the newest. One lookup of `parts_session_call_idx`.
 */
export async function findRecallCall(
  db: DbOrTx,
  sessionPk: number,
  callId: string,
): Promise<RecallCallRow | null> {
  const { rows } = await executePrepared<{
    call_id: string;
    tool: string;
    tool_status: 'completed' | 'error';
    tool_output: string | null;
    tool_error: string | null;
    message_id: string;
    seq: number;
    output_tokens: number;
    pruned_at: Date | string | null;
    purged_at: Date | string | null;
  }>(
    db,
    sql`select p.call_id, p.tool, p.tool_status, p.tool_output, p.tool_error, m.id as message_id, p.seq,
               p.output_tokens, pp.compacted_at as pruned_at, coalesce(p.purged_at, m.purged_at) as purged_at
        from parts p
        join messages m on m.pk = p.message_pk
        left join part_prunes pp on pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx
        where p.session_pk = ${sessionPk} and p.type = 'tool' and p.call_id = ${callId}
          and p.tool_status in ('completed', 'error')
        order by pp.compacted_at is not null desc, p.seq desc
        limit 1`,
  );
  const row = rows[0];
  if (!row) return null;
  return {
    callId: row.call_id,
    tool: row.tool,
    status: row.tool_status,
    output: row.tool_output,
    error: row.tool_error,
    messageId: row.message_id,
    seq: row.seq,
    outputTokens: row.output_tokens,
    prunedAt: dateOrNull(row.pruned_at),
    purgedAt: dateOrNull(row.purged_at),
  };
}

function dateOrNull(value: Date | string | null): Date | null {
  if (value === null) return null;
  return value instanceof Date ? value : new Date(value);
}

/**
 * The text a part is searched by: its one text column (text, else the tool output, else the
 * error), its first 100,000 characters.
 */
const RECALL_DOCUMENT = sql.raw(`left(coalesce(p.text, p.tool_output, p.tool_error, ''), 100000)`);

/**
 * A part's words: those stored with its flag (`recall_words`, migration 0030: the worker's,
 * core `recallVectorOf`), else Postgres's of its text (`parts_recall_words_of`) for an output
 * served before its prune flags it: the same words but for markup tags and entities, which the
 * parser drops (the migration lists the differences).
 */
const PART_WORDS = sql.raw(
  `coalesce(p.recall_words, parts_recall_words_of(coalesce(p.text, p.tool_output, p.tool_error)))`,
);

/** Path and address punctuation read as spaces in the arguments' words (migration 0023). */
const SEPARATORS = `'/.@:\\', '     '`;

/**
 * The words of a tool call's `recall_arguments` (the paths and commands its arguments named),
 * spelled exactly as `parts_recall_arguments_idx` indexes them (migration 0023: separators to
 * spaces, then Postgres's parser). A query's words (core `recallQueryOf`: runs of letters and
 * digits) are among the parser's words of the same paths and commands: it keeps a hyphenated
 * name and its parts, and splits at the separators and at underscores.
 */
const ARGUMENTS_VECTOR = sql.raw(
  `to_tsvector('simple'::regconfig, translate(p.recall_arguments, ${SEPARATORS}))`,
);

/**
 * Matches ranked at most: the newest this many searchable matches are ranked (by their stored
 * words) and excerpted (their text read), so a word found all over a long session reads this many
 * texts; finding its matches still costs their index entries and heap rows.
 */
export const RECALL_RANKED_MATCHES = 100;

/**
 * Marks read at most, newest first, for outputs not flagged yet (see the query): a prune's marks
 * are served as soon as its statement commits, and its flagging (db `markPrunedRecallable`)
 * computes their words after, oldest first, so until it is done the newest marks' outputs are
 * not in the index. A turn's prune marks a handful; a first prune of a long session tens of
 * thousands, whose older outputs below these are found by words once flagged.
 */
export const RECALL_UNFLAGGED_MARKS = 500;

/** Newest matches read before summaries and pinned system messages are left out (see the query). */
const RECALL_CANDIDATES = 2 * RECALL_RANKED_MATCHES;

/** Characters of an excerpt before the first matching word, when there is room. */
const EXCERPT_LEAD = 300;

/** One passage {@link searchRecall} found. */
export interface RecallHitRow {
  messageId: string;
  seq: number;
  role: 'user' | 'assistant' | 'system';
  source: 'summarized' | 'cleared';
  callId: string | null;
  tool: string | null;
  excerpt: string;
  rank: number;
}

/** What {@link searchRecall} searches and returns. */
export interface RecallSearchOptions {
  query: string;
  limit: number;
  /** At most this many characters of each excerpt. */
  excerptChars: number;
  /** The policy's `pinSystemMessages`: pinned system messages stay in view, so are not searched. */
  pinSystemMessages: boolean;
}

/**
 * The session's passages the model no longer sees verbatim that match `query` (websearch syntax:
 * words all present, "a phrase", `or`, `-word`), best first: parts of messages before the latest
 * boundary (not summaries, not pinned system messages) and pruned tool outputs. Purged text is
 * empty, so it never matches.
 *
 * The query is read into recall's own words (core `recallQueryOf`), spelled as the parts' stored
 * words (`recall_words`, migration 0030), so Postgres parses no text for it. The match is a
 * bitmap scan of `parts_recall_search_idx` on (session, words) and one of
 * `parts_recall_arguments_idx` (the calls' arguments): they read the session's matching entries
 * only, not its history and no other session's. The text index holds the
 * parts flagged `recallable` (they left the view: `markRecallableBehind`, and the prune
 * statements), never a part as it is appended. A marker is served before its output is flagged:
 * the session's newest marks down to the first flagged output (at most
 * {@link RECALL_UNFLAGGED_MARKS}) are matched without the index, so a query right after a prune
 * finds what it cleared (one mark and one part read when nothing waits). The newest
 * {@link RECALL_RANKED_MATCHES} searchable matches are ranked (`ts_rank`); an excerpt starts a
 * little before the first place a word of the query occurs. A query with nothing the index can
 * look up (only negations, or no word at all) finds nothing rather than scanning the session.
 */
export async function searchRecall(
  db: DbOrTx,
  sessionPk: number,
  options: RecallSearchOptions,
): Promise<RecallHitRow[]> {
  // Nothing to look for or exclude (no word at all): nothing found, without a statement.
  if (recallQueryOf(options.query) === null) return [];
  const { rows } = await executePrepared<{
    message_id: string;
    seq: number;
    role: RecallHitRow['role'];
    cleared: boolean;
    call_id: string | null;
    tool: string | null;
    excerpt: string;
    rank: number;
  }>(db, searchRecallSql(sessionPk, options));
  return rows.map((row) => ({
    messageId: row.message_id,
    seq: row.seq,
    role: row.role,
    source: row.cleared ? 'cleared' : 'summarized',
    callId: row.call_id,
    tool: row.tool,
    excerpt: row.excerpt,
    rank: Number(row.rank),
  }));
}

/** The statement of {@link searchRecall} (the benchmark explains it). */
export function searchRecallSql(sessionPk: number, options: RecallSearchOptions): SQL {
  // The query in recall's words (core `recallQueryOf`), as the stored words spell them; nothing
  // to look for is the empty query, which matches nothing.
  const query = recallQueryOf(options.query);
  const tsquery = sql`${query?.tsquery ?? ''}::tsquery`;
  // A one-time check: a query the index cannot look up (only negations) would scan the session's entries.
  const lookedUp = sql`querytree(${tsquery}) not in ('', 'T')`;
  const flaggedTextMatch = sql`p.recallable and p.type in ('text', 'reasoning', 'tool') and p.recall_words @@ ${tsquery}`;
  const argumentsMatch = sql`p.recall_arguments is not null and ${ARGUMENTS_VECTOR} @@ ${tsquery}`;
  // The newest flagged matches of one index. The text index and the arguments index are read
  // apart: as one OR the planner read the session's entries of the text index and computed the
  // words of every flagged part to check them (3,000 flagged parts: 0.8 s). A call's arguments
  // are written with its flag (db recallable.ts), so the arguments branch does not repeat the
  // flag, which would let the text index's predicate serve it by session alone.
  const indexedBy = (match: SQL) => sql`(
      select p.pk, p.message_pk, p.seq, p.idx, p.call_id, p.tool
      from parts p
      where p.session_pk = ${sessionPk} and ${match} and ${lookedUp}
        and p.purged_at is null
        -- The mark is a scalar subquery, one key lookup per match in the view: as EXISTS, the
        -- planner may hash the whole part_prunes table (every tenant's marks) instead.
        and (p.seq < (select first_kept from bounds)
             or (p.type = 'tool' and (
                   select true from part_prunes pp
                   where pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx)))
      order by p.seq desc, p.idx desc
      limit ${RECALL_CANDIDATES})`;
  const flaggedAt = (seq: SQL, idx: SQL) =>
    sql`(select p.recallable from parts p where p.session_pk = ${sessionPk} and p.seq = ${seq} and p.idx = ${idx})`;
  return sql`
    with recursive bounds as (${viewBoundsCte(sessionPk)}),
    -- The session's matching parts the model no longer sees verbatim, newest first, from the
    -- parts alone: behind the boundary, or a pruned output (the mark is looked up only for a
    -- match in the view). No text is read yet and nothing is joined: a word found all over
    -- the session costs its matches' index entries and heap rows, not a join for each.
    -- Only flagged parts are indexed (\`recallable\` is the index's predicate); the flag is
    -- not trusted for visibility: one flagged before its compaction completed, or left by a
    -- revert, is still in view, and the checks below leave it out.
    -- A part found by both is one row (\`union\`).
    indexed as (${indexedBy(flaggedTextMatch)} union ${indexedBy(argumentsMatch)}),
    -- Marks served before their outputs were flagged: a prune flags its marks after they are
    -- served, oldest first, so those waiting are the session's newest marks. They are walked
    -- newest first by \`part_prunes_pk\`, one mark a step, down to the first whose output is
    -- flagged (or RECALL_UNFLAGGED_MARKS marks): when nothing waits, one mark and its part.
    unflagged (seq, idx, n, flagged) as (
      (select pp.seq, pp.idx, 1, ${flaggedAt(sql`pp.seq`, sql`pp.idx`)}
       from part_prunes pp where pp.session_pk = ${sessionPk}
       order by pp.seq desc, pp.idx desc limit 1)
      union all
      select nx.seq, nx.idx, u.n + 1, ${flaggedAt(sql`nx.seq`, sql`nx.idx`)}
      from unflagged u
      cross join lateral (
        select pp.seq, pp.idx from part_prunes pp
        where pp.session_pk = ${sessionPk} and (pp.seq, pp.idx) < (u.seq, u.idx)
        order by pp.seq desc, pp.idx desc limit 1) nx
      where not u.flagged and u.n < ${RECALL_UNFLAGGED_MARKS}::int
    ),
    -- Their outputs matched without the index: their words computed here, a few hundred at most.
    pending as (
      select p.pk, p.message_pk, p.seq, p.idx, p.call_id, p.tool
      from unflagged u
      join parts p on p.session_pk = ${sessionPk} and p.seq = u.seq and p.idx = u.idx
      where not u.flagged and p.type = 'tool' and p.purged_at is null
        and (${PART_WORDS} @@ ${tsquery} or (${argumentsMatch})) and ${lookedUp}
    ),
    matched as (
      select * from indexed
      union
      select * from pending
      order by seq desc, idx desc
      limit ${RECALL_CANDIDATES}
    ),
    -- Of those, what the view does not show otherwise: not summaries, not pinned system messages.
    -- Those are a handful in a session, so the candidates above leave room for them.
    searchable as (
      -- A call found by its arguments alone is shown by them (the paths and command it named).
      select c.seq, c.idx, c.call_id, c.tool,
             case when a.by_arguments then p.recall_arguments else ${RECALL_DOCUMENT} end as doc,
             case when a.by_arguments then ${ARGUMENTS_VECTOR} else a.words end as words,
             m.id as message_id, m.role, pp.compacted_at is not null as cleared
      from matched c
      join parts p on p.pk = c.pk
      cross join lateral (
        select w.words, p.recall_arguments is not null and not (w.words @@ ${tsquery}) as by_arguments
        from (select ${PART_WORDS} as words) w) a
      join messages m on m.pk = c.message_pk
      left join part_prunes pp on pp.session_pk = ${sessionPk} and pp.seq = c.seq and pp.idx = c.idx
      where m.purged_at is null
        and (pp.compacted_at is not null
             or (not m.summary and not (${options.pinSystemMessages}::boolean and m.role = 'system')))
      order by c.seq desc, c.idx desc
      limit ${RECALL_RANKED_MATCHES}
    ),
    -- An excerpt starts a little before the first place one of the query's words occurs.
    ranked as (
      select s.*, ts_rank(s.words, ${tsquery}) as rank,
             (select min(nullif(strpos(lower(s.doc), w), 0)) from unnest(${sql.param(query?.words ?? [])}::text[]) w) as at
      from searchable s
      order by rank desc, s.seq desc, s.idx desc
      limit ${options.limit}
    )
    select r.message_id, r.seq, r.role, r.cleared, r.call_id, r.tool, r.rank::float8 as rank,
           substr(r.doc, greatest(1, coalesce(r.at, 1) - ${EXCERPT_LEAD}), ${options.excerptChars}) as excerpt
    from ranked r
    order by r.rank desc, r.seq desc, r.idx desc`;
}
