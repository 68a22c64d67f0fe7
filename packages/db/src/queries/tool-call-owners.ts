import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';

/** The stored message that holds a tool call, as a later result for it is written. */
export interface ToolCallOwner {
  callId: string;
  messageId: string;
  tool: string;
  status: 'pending' | 'running' | 'completed' | 'error';
  /** The call's stored input: a result written with it is counted without reading the part again. */
  input: unknown;
}

/**
 * The messages holding the session's tool calls `callIds`, by call id: of several calls with one
 * id (ids are unique per message, not per session), the newest. One probe of
 * `parts_session_call_idx` per id, however often an id recurs in the history.
 */
export async function findToolCallOwners(
  db: DbOrTx,
  sessionPk: number,
  callIds: string[],
): Promise<Map<string, ToolCallOwner>> {
  if (callIds.length === 0) return new Map();
  const result = await db.execute<{
    call_id: string;
    message_id: string;
    tool: string;
    tool_status: ToolCallOwner['status'];
    tool_input: unknown;
  }>(
    // Per id the newest call: one backward step of `parts_session_call_idx` (session, id, seq).
    sql`select o.call_id, m.id as message_id, o.tool, o.tool_status, o.tool_input
        from unnest(${sql.param(callIds)}::text[]) as wanted(call_id)
        cross join lateral (
          select p.call_id, p.message_pk, p.tool, p.tool_status, p.tool_input
          from parts p
          where p.session_pk = ${sessionPk} and p.type = 'tool' and p.call_id = wanted.call_id
          order by p.seq desc
          limit 1
        ) o
        join messages m on m.pk = o.message_pk`,
  );
  return new Map(
    result.rows.map((r) => [
      r.call_id,
      {
        callId: r.call_id,
        messageId: r.message_id,
        tool: r.tool,
        status: r.tool_status,
        // As a stored part reads it (`partFromRow`): no input is an empty object.
        input: r.tool_input ?? {},
      },
    ]),
  );
}
