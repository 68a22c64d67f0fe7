import { sql } from 'drizzle-orm';
import type { Message } from '@compactor/core';
import type { DbOrTx } from '../client';
import { messagesFromRows, type MessageRow, type PartRow } from '../mappers';
import { executePrepared } from '../prepared';
import { messages } from '../schema';
import { partColumns, partRowMapper, viewMessagesWithParts } from './parts';
import { rowMapper, selectList } from './raw-rows';
import { INT4_MAX, viewBoundsCte } from './view-bounds';

const MESSAGE_COLUMNS = selectList(messages, 'm', 'm_');
const messageRowOf = rowMapper(messages, 'm_');
const PART_COLUMNS = partColumns('p_', { omitPrunedOutputs: true, clamped: true });
const PART_COLUMNS_NO_OUTPUT = partColumns('p_', {
  omitPrunedOutputs: true,
  clamped: true,
  omitOutput: true,
});
const partRowOf = partRowMapper('p_');

/** The messages of CTE `v` with their parts, one row per part (as `contextRowsSql` reads them). */
const WITH_PARTS = viewMessagesWithParts(PART_COLUMNS);
/** {@link WITH_PARTS} without the tool outputs' text. */
const WITH_PARTS_NO_OUTPUTS = viewMessagesWithParts(
  sql`${PART_COLUMNS_NO_OUTPUT}, null::text as "p_tool_output"`,
);

/** Which window of a compaction's covered view to read (seqs are exclusive bounds). */
export interface ViewWindowRequest {
  /** Pinned system messages are left out (the compaction reads them with the summaries). */
  pinSystemMessages: boolean;
  /** Only messages after this seq (default: from the view's first kept seq). */
  afterSeq?: number;
  /** Only messages before this seq (default: none). */
  beforeSeq?: number;
  /** `asc`: the oldest `limit` messages of the range; `desc`: the newest, still returned in seq order. */
  order: 'asc' | 'desc';
  limit: number;
  /**
   * `false`: tool outputs are left unread (null), for a reader that needs the calls, their
   * inputs and the texts but not what the tools returned. Default `true`.
   */
  outputs?: boolean;
}

/**
 * One window of the context view's kept messages — not the previous summaries, not pinned system
 * messages — with their parts as `selectContextRows` shows them (pruned outputs unread, clamped
 * parts as their clamp), in seq order. A compaction pages through its covered range with it by
 * seq (keyset), so it never holds more than a window of a long session: the rows of a window are
 * one index range scan from the view's first kept seq (`messages_session_seq_uq`), each
 * message's parts one index lookup (the lateral's `offset 0`, as in `contextRowsSql`).
 */
export async function selectViewWindow(
  db: DbOrTx,
  sessionPk: number,
  request: ViewWindowRequest,
): Promise<Message[]> {
  const after = request.afterSeq ?? -1;
  const before = request.beforeSeq ?? INT4_MAX;
  const order = request.order === 'asc' ? sql`asc` : sql`desc`;
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`
      with bounds as (${viewBoundsCte(sessionPk)}),
      v as (
        select ${MESSAGE_COLUMNS} from bounds b cross join lateral (
          select * from messages k
          where k.session_pk = ${sessionPk} and k.seq >= b.first_kept and not k.summary
            and k.seq > ${after} and k.seq < ${before}
            and not (${request.pinSystemMessages}::boolean and k.role = 'system')
          order by k.seq ${order} limit ${request.limit}
        ) m
      )
      ${request.outputs === false ? WITH_PARTS_NO_OUTPUTS : WITH_PARTS}`,
  );
  return messagesOf(rows);
}

/**
 * The context view's summary messages and, with `pinSystemMessages`, its pinned system
 * messages up to `throughSeq` (what a compaction keeps apart from the windows of
 * {@link selectViewWindow}), with their parts, in seq order.
 */
export async function selectViewHead(
  db: DbOrTx,
  sessionPk: number,
  { pinSystemMessages, throughSeq }: { pinSystemMessages: boolean; throughSeq: number },
): Promise<Message[]> {
  const { rows } = await executePrepared<Record<string, unknown>>(
    db,
    sql`
      with bounds as (${viewBoundsCte(sessionPk)}),
      v as (
        select ${MESSAGE_COLUMNS} from bounds b cross join lateral unnest(b.summary_ids) as s(id)
        cross join lateral (
          select * from messages k
          where k.session_pk = ${sessionPk} and k.id = s.id and k.seq > coalesce(b.covers_through_seq, -1)
          offset 0
        ) m
        union all
        select ${MESSAGE_COLUMNS} from messages m
        where m.session_pk = ${sessionPk} and ${pinSystemMessages}::boolean
          and m.role = 'system' and not m.summary and m.seq <= ${throughSeq}
      )
      ${WITH_PARTS}`,
  );
  return messagesOf(rows);
}

/** Messages with their parts, in seq order, from rows of {@link WITH_PARTS}. */
function messagesOf(rows: Record<string, unknown>[]): Message[] {
  const messageRows = new Map<unknown, MessageRow>();
  const partRows: PartRow[] = [];
  for (const row of rows) {
    if (!messageRows.has(row.m_pk)) messageRows.set(row.m_pk, messageRowOf(row));
    if (row.p_pk !== null) partRows.push(partRowOf(row));
  }
  return messagesFromRows([...messageRows.values()], partRows);
}
