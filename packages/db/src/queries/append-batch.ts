import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';
import type { ExistingMessageRef } from './messages';

/**
 * An append's statements are one call of the SQL function `compactor_append` (migration
 * 0005): it locks the session row, optionally looks up what the batch must be checked against,
 * and inserts the batch, in one round trip. An append was eight round trips (begin, lock, ids,
 * unfinished calls, seqs, messages, parts, commit); a clean one is one now.
 */

/** A `messages` row as the function takes it (JSON: snake_case keys, ISO timestamps). */
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

/** A batch as the append functions take it: its messages in order, and their parts. */
export interface BatchRows {
  messages: BatchMessageRow[];
  parts: BatchPartRow[];
}

/** A `parts` row as the function takes it, naming its message by client id. */
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

/** A tool call stored as still pending or running, in the message that made it. */
export interface UnfinishedCall {
  callId: string;
  messageId: string;
  tool: string;
  input: unknown;
}

/** What a call of `compactor_append` found or wrote. */
export interface AppendCallResult {
  /** False when there is no such session (nothing was written). */
  found: boolean;
  /** The batch's message ids already stored, with their content hash. */
  existing: ExistingMessageRef[];
  /** The batch's call ids stored unfinished. */
  unfinished: UnfinishedCall[];
  /** The inserted messages, in batch order; empty when anything was found or nothing was given. */
  inserted: Array<{ pk: number; id: string; seq: number }>;
}

/** The JSON a batch travels in; a lone surrogate becomes U+FFFD, as pg's UTF-8 encoding of text does. */
function batchJson(rows: unknown[]): string {
  return JSON.stringify(rows, (_key, value: unknown) =>
    typeof value === 'string' ? (value as string & { toWellFormed(): string }).toWellFormed() : value,
  );
}

/**
 * A batch's two jsonb parameters, already serialised in jsonb's binary wire format (a version
 * byte, then the JSON as UTF-8). node-postgres sends a `Uint8Array` parameter as it is, so the
 * statement costs the event loop a copy, not a stringify and a UTF-8 encoding of the whole batch:
 * 0.3 s for 31 MiB, which a worker thread ({@link serializeBatchRows}) does instead.
 */
export interface SerializedBatchRows {
  messages: Uint8Array;
  parts: Uint8Array;
}

/** jsonb's binary input format: this version byte, then the JSON text. */
const JSONB_BINARY_VERSION = 1;

function jsonbBinary(json: string): Uint8Array {
  const bytes = Buffer.allocUnsafe(1 + Buffer.byteLength(json));
  bytes[0] = JSONB_BINARY_VERSION;
  bytes.write(json, 1);
  return bytes;
}

/** {@link SerializedBatchRows} of a batch: the parameters {@link callAppend} would send for it. */
export function serializeBatchRows(batch: BatchRows): SerializedBatchRows {
  const { messages, parts } = batchJsonParams(batch);
  return { messages: jsonbBinary(messages), parts: jsonbBinary(parts) };
}

/**
 * One call of `compactor_append`. With `check`, it looks up `messageIds` and `callIds` after
 * taking the lock and writes nothing when it finds any of them; `batch` (null: look up only) is
 * inserted at the session's next seqs otherwise. Without `check` it inserts unconditionally
 * (the caller checked under the same lock). Messages and parts travel as two JSON parameters:
 * the text never changes with the batch, and 70,000 parts are one statement.
 */
export async function callAppend(
  tx: DbOrTx,
  sessionPk: number,
  {
    check,
    messageIds = [],
    callIds = [],
    batch,
  }: {
    check: boolean;
    messageIds?: string[];
    callIds?: string[];
    batch: BatchRows | null;
  },
): Promise<AppendCallResult> {
  const { messages, parts } = batchParams(batch);
  const { rows } = await executePrepared<AppendRow>(
    tx,
    sql`select * from compactor_append(${sessionPk}::bigint, ${sql.param(messageIds)}::text[],
          ${sql.param(callIds)}::text[], ${messages}::jsonb, ${parts}::jsonb, ${check}::boolean)`,
  );
  return appendResult(rows);
}

/**
 * `compactor_append` without checks, in the statement of `guard` (a data-modifying statement that
 * returns `session_pk`): called once for each row the guard returns, so the messages are written
 * only when the guard wrote its row. No rows when the guard returned none (nothing was written);
 * otherwise one row per guard row at least (an empty batch: the function's columns all null).
 */
export function appendAfterSql(guard: SQL, batch: BatchRows): SQL {
  const { messages, parts } = batchParams(batch);
  return sql`with guard as (${guard})
        select a.* from guard g
        left join lateral compactor_append(g.session_pk, '{}'::text[], '{}'::text[], ${messages}::jsonb,
                                           ${parts}::jsonb, false) a on true`;
}

/** What a call of `compactor_append_to_session` found or wrote. */
export interface AppendToSessionResult extends AppendCallResult {
  /** The session row as it was locked (JSON keyed by column), unless `found` is false. */
  session: Record<string, unknown> | null;
  /** The session's model is not the one the batch was counted for: nothing was written. */
  modelChanged: boolean;
}

/** What `compactor_append_to_session` is called with (see {@link callAppendToSession}). */
export interface AppendToSessionCall {
  messageIds: string[];
  callIds: string[];
  batch: BatchRows | SerializedBatchRows | null;
}

/**
 * One call of `compactor_append_to_session` (migration 0006): the session found by its client ids
 * and locked, returned, and appended to as {@link callAppend} with `check` does, in one round
 * trip, unless its model is no longer `modelId` (the encoding the batch was counted with).
 */
export async function callAppendToSession(
  tx: DbOrTx,
  session: { tenantId: string; id: string; modelId: string },
  call: AppendToSessionCall,
): Promise<AppendToSessionResult> {
  const { rows } = await executePrepared<AppendRow>(tx, appendToSessionSql(session, call));
  return appendToSessionResult(rows);
}

/** The statement of {@link callAppendToSession}, for a caller that sends it with others. */
export function appendToSessionSql(
  session: { tenantId: string; id: string; modelId: string },
  { messageIds, callIds, batch }: AppendToSessionCall,
): SQL {
  const { messages, parts } = batchParams(batch);
  return sql`select * from compactor_append_to_session(${session.tenantId}::text, ${session.id}::text,
          ${session.modelId}::text, ${sql.param(messageIds)}::text[], ${sql.param(callIds)}::text[],
          ${messages}::jsonb, ${parts}::jsonb)`;
}

/** What {@link appendToSessionSql} returned, read. */
export function appendToSessionResult(rows: Record<string, unknown>[]): AppendToSessionResult {
  const appendRows = rows as AppendRow[];
  const sessionRow = appendRows.find((row) => row.r_kind === 'session');
  return {
    ...appendResult(appendRows),
    session: (sessionRow?.r_input as Record<string, unknown> | undefined) ?? null,
    modelChanged: appendRows.some((row) => row.r_kind === 'model'),
  };
}

/** A row either function returns. */
interface AppendRow extends Record<string, unknown> {
  r_kind: 'missing' | 'session' | 'model' | 'message' | 'call' | 'inserted';
  r_pk: number | string | null;
  r_id: string | null;
  r_seq: number | null;
  r_hash: string | null;
  r_message_id: string | null;
  r_tool: string | null;
  r_input: unknown;
}

function batchParams(batch: BatchRows | SerializedBatchRows | null) {
  if (batch === null) return { messages: null, parts: null };
  return isSerialized(batch) ? batch : batchJsonParams(batch);
}

function batchJsonParams(batch: BatchRows): { messages: string; parts: string } {
  return {
    messages: batchJson(batch.messages.map((message, ord) => ({ ...message, ord }))),
    parts: batchJson(batch.parts),
  };
}

function isSerialized(batch: BatchRows | SerializedBatchRows): batch is SerializedBatchRows {
  return batch.messages instanceof Uint8Array;
}

function appendResult(rows: AppendRow[]): AppendCallResult {
  const result: AppendCallResult = { found: true, existing: [], unfinished: [], inserted: [] };
  for (const row of rows) {
    const id = row.r_id ?? '';
    if (row.r_kind === 'missing') result.found = false;
    else if (row.r_kind === 'message') {
      result.existing.push({
        pk: Number(row.r_pk),
        id,
        seq: Number(row.r_seq),
        contentHash: row.r_hash ?? '',
      });
    } else if (row.r_kind === 'call') {
      result.unfinished.push({
        callId: id,
        messageId: row.r_message_id ?? '',
        tool: row.r_tool ?? '',
        input: row.r_input,
      });
    } else if (row.r_kind === 'inserted') {
      result.inserted.push({ pk: Number(row.r_pk), id, seq: Number(row.r_seq) });
    }
  }
  return result;
}
