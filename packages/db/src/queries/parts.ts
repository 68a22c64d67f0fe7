import { eq, getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { NewPartRow, PartColumns, PartRow } from '../mappers';
import { partPrunes, parts } from '../schema';
import { executePrepared } from '../prepared';
import { rowMapper } from './raw-rows';
import { seqRange, type SeqRange } from './recallable';

/**
 * Inserts part rows and returns them as stored; callers keep a batch under Postgres' 65,535
 * bind parameters (~1,000 rows).
 */
export async function insertParts(db: DbOrTx, rows: NewPartRow[]): Promise<PartColumns[]> {
  if (rows.length === 0) return [];
  return db.insert(parts).values(rows).returning();
}

/**
 * All parts of these messages, in message then position order, with their prune state. The pks
 * go as one array parameter: a list of one parameter per message failed past 65,535 messages.
 * `omitPrunedOutputs` leaves a pruned output unread (`toolOutput` null): readers of the context
 * view render the placeholder instead, so the text of a long session's pruned outputs (most of
 * its bytes) never leaves the database. The raw history reads them.
 */
export async function listPartsOfMessages(
  db: DbOrTx,
  messagePks: number[],
  { omitPrunedOutputs = false }: { omitPrunedOutputs?: boolean } = {},
): Promise<PartRow[]> {
  if (messagePks.length === 0) return [];
  // A prepared statement (see executePrepared), one text for each value of the flag.
  const { rows } = await executePrepared(
    db,
    sql`select ${partColumns('', { omitPrunedOutputs })}
        from parts p
        left join part_prunes pp on pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx
        where p.message_pk = any(${sql.param(messagePks)}::bigint[])
        order by p.message_pk, p.idx`,
  );
  return rows.map(partRowOf);
}

/** The content columns a clamp may replace (`part_clamps` has each, null when unchanged). */
const CLAMPED_COLUMNS = new Set([
  'text',
  'tool_input',
  'tool_output',
  'tool_error',
  'tokens',
  'output_tokens',
]);

/**
 * The select list of a part row `p` joined with its prune mark `pp`, every column under
 * `prefix`: `omitPrunedOutputs` selects a pruned output as null (see {@link listPartsOfMessages}).
 * `clamped` (the context view's readers) selects the part as the view shows it: the columns a
 * clamp replaced from its row `c` (see {@link clampJoin}); the raw history reads the part itself.
 * `omitOutput` leaves `tool_output` out of the list, for a reader that selects its own.
 */
export function partColumns(
  prefix: string,
  {
    omitPrunedOutputs,
    clamped = false,
    omitOutput = false,
  }: { omitPrunedOutputs: boolean; clamped?: boolean; omitOutput?: boolean },
): SQL {
  const column = (name: string) =>
    clamped && CLAMPED_COLUMNS.has(name) ? `coalesce(c."${name}", p."${name}")` : `p."${name}"`;
  const output = omitPrunedOutputs
    ? `case when pp.compacted_at is null then ${column('tool_output')} end`
    : column('tool_output');
  return sql.raw(
    [
      ...Object.values(getTableColumns(parts))
        .filter((c) => c.name !== 'tool_output')
        .map((c) => `${column(c.name)} as "${prefix}${c.name}"`),
      ...(omitOutput ? [] : [`${output} as "${prefix}tool_output"`]),
      `pp.compacted_at as "${prefix}compacted_at"`,
    ].join(', '),
  );
}

/**
 * Joins a part `p` with its clamp as `c` (core fit.ts): a lateral lookup gated by `p.clamped`,
 * which Postgres checks before it reads the index, so an unclamped part costs nothing more.
 */
export function clampJoin(part: SQL = sql`p`): SQL {
  return sql`left join lateral (
    select c.text, c.tool_input, c.tool_output, c.tool_error, c.tokens, c.output_tokens from part_clamps c
    where ${part}.clamped and c.part_pk = ${part}.pk offset 0
  ) c on true`;
}

/**
 * The messages of CTE `v` with their parts, one row per part (`columns` of each part, its prune
 * and its clamp): how the context view and a compaction's windows over it read parts.
 */
export function viewMessagesWithParts(columns: SQL): SQL {
  return sql`
  select v.*, x.* from v
  left join lateral (
    select ${columns} from parts p
    left join lateral (
      select x.compacted_at from part_prunes x
      where x.session_pk = p.session_pk and x.seq = p.seq and x.idx = p.idx offset 0
    ) pp on true
    ${clampJoin()}
    where p.message_pk = v.m_pk offset 0
  ) x on true`;
}

/** A part's output tokens as the context view shows it: its clamp's when it is clamped. */
export function shownOutputTokens(part: SQL = sql`p`): SQL {
  return sql`case when ${part}.clamped
    then (select c.output_tokens from part_clamps c where c.part_pk = ${part}.pk)
    else ${part}.output_tokens end`;
}

/** The {@link PartRow} of a raw row selected with {@link partColumns} under `prefix`. */
export function partRowMapper(prefix: string): (raw: Record<string, unknown>) => PartRow {
  const columnsRow = rowMapper(parts, prefix);
  const compactedAtColumn = getTableColumns(partPrunes).compactedAt;
  return (raw) => {
    const compactedAt = raw[`${prefix}compacted_at`];
    return {
      ...columnsRow(raw),
      compactedAt:
        compactedAt === null || compactedAt === undefined
          ? null
          : (compactedAtColumn.mapFromDriverValue(compactedAt) as Date),
    };
  };
}

const partRowOf = partRowMapper('');

/** Tool-part columns a PATCH may change; recount `tokens` and `outputTokens` along with the output. */
export type ToolPartPatch = Partial<
  Pick<NewPartRow, 'toolStatus' | 'toolInput' | 'toolOutput' | 'toolError' | 'tokens' | 'outputTokens'>
>;

/** Updates a part row by pk, unchecked (`patchMessage` decides what may change); the row as stored. */
export async function updatePart(db: DbOrTx, pk: number, patch: ToolPartPatch): Promise<PartColumns> {
  const [row] = await db.update(parts).set(patch).where(eq(parts.pk, pk)).returning();
  if (!row) throw new Error(`part ${pk} vanished while its message was locked`);
  return row;
}

/** A tool part to prune, addressed by its message's seq and its call id (core's `PrunablePart` has both). */
export interface PartRef {
  seq: number;
  callId: string;
}

/**
 * Prunes tool outputs in one set-based statement (lazy deletion: the output stays stored; the
 * mark is a row in the narrow `part_prunes`; `markPrunedRecallable` makes them searchable after,
 * within the `markedSeqs` this returns). Only finished outputs can be cleared, and parts already
 * pruned are left alone, so repeating the statement is harmless. The refs go as two array
 * parameters, however many. Returns how many parts it marked, the output tokens that no longer
 * reach the model, and the seqs of the first and last part it marked (null when none).
 */
export async function markPartsCompacted(
  db: DbOrTx,
  sessionPk: number,
  refs: PartRef[],
  { at, by }: { at: Date; by: string },
): Promise<{ parts: number; tokens: number; markedSeqs: SeqRange | null }> {
  if (refs.length === 0) return { parts: 0, tokens: 0, markedSeqs: null };
  const result = await executePrepared<{
    parts: string;
    tokens: string;
    first_seq: number | null;
    last_seq: number | null;
  }>(
    db,
    sql`
    with marked as (
      insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
      select p.session_pk, p.seq, p.idx, ${at.toISOString()}::timestamptz, ${by}
      from unnest(${sql.param(refs.map((r) => r.seq))}::int[], ${sql.param(refs.map((r) => r.callId))}::text[]) r(seq, call_id)
      join parts p on p.session_pk = ${sessionPk} and p.seq = r.seq and p.call_id = r.call_id
      where p.type = 'tool' and p.tool_status = 'completed'
      -- Key order, as pruneToolOutputs: concurrent prunes of a session queue, never deadlock.
      order by p.seq, p.idx
      on conflict do nothing
      returning seq, idx
    )
    select count(*) as parts, coalesce(sum(p.output_tokens), 0) as tokens,
           min(marked.seq) as first_seq, max(marked.seq) as last_seq
    from marked join parts p on p.session_pk = ${sessionPk} and p.seq = marked.seq and p.idx = marked.idx
  `,
  );
  const row = result.rows[0];
  return {
    parts: Number(row?.parts ?? 0),
    tokens: Number(row?.tokens ?? 0),
    markedSeqs: seqRange(row?.first_seq, row?.last_seq),
  };
}

/**
 * Tool calls of the session still pending or running, among these call ids, with their message,
 * as one statement for a caller that sends it in a pipelined transaction (one array parameter,
 * and the predicate of the partial index `parts_session_unfinished_call_idx`);
 * {@link unfinishedToolCallOf} reads its rows.
 */
export function unfinishedToolCallsSql(sessionPk: number, callIds: string[]): SQL {
  return sql`select p.call_id, m.id as message_id, p.tool, p.tool_input
    from parts p join messages m on m.pk = p.message_pk
    where p.session_pk = ${sessionPk} and p.call_id = any(${sql.param(callIds)}::text[])
      and p.tool_status in ('pending', 'running')`;
}

export function unfinishedToolCallOf(row: Record<string, unknown>) {
  return {
    callId: (row['call_id'] as string | null) ?? '',
    messageId: row['message_id'] as string,
    tool: (row['tool'] as string | null) ?? '',
    input: row['tool_input'],
  };
}
