import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import type { ExistingMessageRef } from './messages';

/**
 * The statements of an append, each one round trip with a fixed text (prepared once per
 * connection, see executePrepared). An append was eight round trips (lock, ids, unfinished
 * calls, seqs, messages, parts, begin, commit); it is five now, and the statements with the most
 * text are never planned twice.
 */

/** Locks the session row for the rest of the transaction; false when there is no such session. */
export async function lockSessionRow(tx: DbOrTx, sessionPk: number): Promise<boolean> {
  const { rows } = await executePrepared(tx, sql`select pk from sessions where pk = ${sessionPk} for update`);
  return rows.length > 0;
}

/** A tool call stored as still pending or running, in the message that made it. */
export interface UnfinishedCall {
  callId: string;
  messageId: string;
  tool: string;
  input: unknown;
}

/**
 * What a batch must be checked against, in one statement (run with the session locked): which of
 * its message ids are stored, with what content, and which of its call ids are stored unfinished.
 */
export async function lookupBatch(
  tx: DbOrTx,
  sessionPk: number,
  messageIds: string[],
  callIds: string[],
): Promise<{ existing: ExistingMessageRef[]; unfinished: UnfinishedCall[] }> {
  const { rows } = await executePrepared<{
    kind: 'message' | 'call';
    pk: number | string | null;
    id: string;
    seq: number | null;
    content_hash: string | null;
    message_id: string | null;
    tool: string | null;
    input: unknown;
  }>(
    tx,
    sql`select 'message' as kind, m.pk, m.id, m.seq, m.content_hash,
               null::text as message_id, null::text as tool, null::jsonb as input
        from messages m
        where m.session_pk = ${sessionPk} and m.id = any(${sql.param(messageIds)}::text[])
        union all
        -- The predicate of the partial index parts_session_unfinished_call_idx.
        select 'call', null, p.call_id, null, null, m.id, p.tool, p.tool_input
        from parts p join messages m on m.pk = p.message_pk
        where p.session_pk = ${sessionPk} and p.call_id = any(${sql.param(callIds)}::text[])
          and p.tool_status in ('pending', 'running')`,
  );
  const existing: ExistingMessageRef[] = [];
  const unfinished: UnfinishedCall[] = [];
  for (const row of rows) {
    if (row.kind === 'message') {
      existing.push({
        pk: Number(row.pk),
        id: row.id,
        seq: Number(row.seq),
        contentHash: row.content_hash ?? '',
      });
    } else {
      unfinished.push({
        callId: row.id,
        messageId: row.message_id ?? '',
        tool: row.tool ?? '',
        input: row.input,
      });
    }
  }
  return { existing, unfinished };
}

/** A `messages` row as {@link insertBatch} takes it (JSON: snake_case keys, ISO timestamps). */
export interface BatchMessageRow {
  id: string;
  role: string;
  finish: string | null;
  error: unknown;
  usage_input: number | null;
  usage_output: number | null;
  usage_reasoning: number | null;
  usage_cache_read: number | null;
  usage_cache_write: number | null;
  metadata: Record<string, unknown>;
  summary: boolean;
  compaction_id: string | null;
  content_hash: string;
  created_at: string;
}

/** A `parts` row as {@link insertBatch} takes it, naming its message by client id. */
export interface BatchPartRow {
  message_id: string;
  idx: number;
  type: string;
  text: string | null;
  call_id: string | null;
  tool: string | null;
  tool_status: string | null;
  tool_input: unknown;
  tool_output: string | null;
  tool_error: string | null;
  mime: string | null;
  filename: string | null;
  url: string | null;
  compaction_auto: boolean | null;
  tokens: number;
  output_tokens: number;
}

/** The JSON a batch travels in; a lone surrogate becomes U+FFFD, as pg's UTF-8 encoding of text does. */
function batchJson(rows: unknown[]): string {
  return JSON.stringify(rows, (_key, value: unknown) =>
    typeof value === 'string' ? (value as string & { toWellFormed(): string }).toWellFormed() : value,
  );
}

/**
 * Inserts messages known to be new (no id stored yet) with their parts, at the session's next
 * seqs (in `messages` order), in one statement: the seq reservation, the messages and the parts
 * travel as two JSON parameters, so the text never changes with the batch and a batch of any
 * size (70,000 parts) is one statement, not one bind parameter per value. Call with the session
 * locked. Returns each message's pk, id and seq.
 */
export async function insertBatch(
  tx: DbOrTx,
  sessionPk: number,
  messages: BatchMessageRow[],
  parts: BatchPartRow[],
): Promise<Array<{ pk: number; id: string; seq: number }>> {
  if (messages.length === 0) return [];
  const { rows } = await executePrepared<{ pk: number | string; id: string; seq: number }>(
    tx,
    sql`with reserved as (
          update sessions set last_seq = last_seq + ${messages.length}::int, updated_at = now()
          where pk = ${sessionPk} returning last_seq - ${messages.length}::int as before
        ),
        new_messages as (
          insert into messages (session_pk, seq, id, role, finish, error, usage_input, usage_output,
                                usage_reasoning, usage_cache_read, usage_cache_write, metadata, summary,
                                compaction_id, content_hash, created_at)
          select ${sessionPk}, r.before + m.ord + 1, m.id, m.role, m.finish, m.error, m.usage_input,
                 m.usage_output, m.usage_reasoning, m.usage_cache_read, m.usage_cache_write,
                 coalesce(m.metadata, '{}'::jsonb), m.summary, m.compaction_id, m.content_hash, m.created_at
          from reserved r,
               jsonb_to_recordset(${batchJson(messages.map((message, ord) => ({ ...message, ord })))}::jsonb) as m(
                 ord int, id text, role text, finish text, error jsonb, usage_input int, usage_output int,
                 usage_reasoning int, usage_cache_read int, usage_cache_write int, metadata jsonb,
                 summary boolean, compaction_id text, content_hash text, created_at timestamptz)
          returning pk, id, seq
        ),
        new_parts as (
          insert into parts (message_pk, session_pk, seq, idx, type, text, call_id, tool, tool_status,
                             tool_input, tool_output, tool_error, mime, filename, url, compaction_auto,
                             tokens, output_tokens)
          select nm.pk, ${sessionPk}, nm.seq, p.idx, p.type, p.text, p.call_id, p.tool, p.tool_status,
                 p.tool_input, p.tool_output, p.tool_error, p.mime, p.filename, p.url, p.compaction_auto,
                 p.tokens, p.output_tokens
          from jsonb_to_recordset(${batchJson(parts)}::jsonb) as p(
                 message_id text, idx int, type text, text text, call_id text, tool text, tool_status text,
                 tool_input jsonb, tool_output text, tool_error text, mime text, filename text, url text,
                 compaction_auto boolean, tokens int, output_tokens int)
          join new_messages nm on nm.id = p.message_id
        )
        select pk, id, seq from new_messages`,
  );
  if (rows.length !== messages.length) throw new Error(`session ${sessionPk} vanished while appending`);
  return rows.map((row) => ({ pk: Number(row.pk), id: row.id, seq: Number(row.seq) }));
}
