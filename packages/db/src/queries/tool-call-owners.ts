import { sql, type SQL } from 'drizzle-orm';
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
  const result = await db.execute<Record<string, unknown>>(toolCallOwnersSql(sessionPk, callIds));
  return toolCallOwnersOf(result.rows);
}

/**
 * {@link findToolCallOwners}'s statement, for a caller that sends it with others; `session` is
 * its pk or an expression that yields it (a scalar subquery). {@link toolCallOwnersOf} reads it.
 */
export function toolCallOwnersSql(session: number | SQL, callIds: string[]): SQL {
  // Per id the newest call: one backward step of `parts_session_call_idx` (session, id, seq).
  return sql`select o.call_id, m.id as message_id, o.tool, o.tool_status, o.tool_input
      from unnest(${sql.param(callIds)}::text[]) as wanted(call_id)
      cross join lateral (
        select p.call_id, p.message_pk, p.tool, p.tool_status, p.tool_input
        from parts p
        where p.session_pk = ${session} and p.type = 'tool' and p.call_id = wanted.call_id
        order by p.seq desc
        limit 1
      ) o
      join messages m on m.pk = o.message_pk`;
}

export function toolCallOwnersOf(rows: readonly Record<string, unknown>[]): Map<string, ToolCallOwner> {
  return new Map(
    rows.map((r) => [
      r['call_id'] as string,
      {
        callId: r['call_id'] as string,
        messageId: r['message_id'] as string,
        tool: r['tool'] as string,
        status: r['tool_status'] as ToolCallOwner['status'],
        // As a stored part reads it (`partFromRow`): no input is an empty object.
        input: r['tool_input'] ?? {},
      },
    ]),
  );
}
