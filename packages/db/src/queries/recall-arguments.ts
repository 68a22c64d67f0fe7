import { sql } from 'drizzle-orm';
import { artifactsOfToolPart, type ToolPart } from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';

/** Longest `recall_arguments` written: the paths and commands of one call, capped like the index's text. */
const MAX_ARGUMENTS_CHARS = 100_000;

/**
 * The words recall finds a tool call by besides its output: the paths its arguments name (read,
 * written, patched, or named in a shell command) and the command it ran, one a line, as core's
 * ledger classifiers read them. Null when it names neither.
 */
export function recallArgumentsOf(call: Pick<ToolPart, 'tool' | 'status' | 'input'>): string | null {
  const artifacts = artifactsOfToolPart({
    type: 'tool',
    callId: '',
    tool: call.tool,
    status: call.status,
    input: call.input,
    output: null,
    error: null,
    compactedAt: null,
    tokens: 0,
  } as ToolPart);
  const lines = [...new Set([...artifacts.files.map((op) => op.path), artifacts.command?.command ?? ''])];
  const text = lines.filter((line) => line !== '').join('\n');
  return text === '' ? null : text.slice(0, MAX_ARGUMENTS_CHARS);
}

/**
 * The `recall_arguments` to write for the tool calls of seqs `from` (included) to `before`
 * (excluded) that have none yet: the calls' tool, status and input read once, their words
 * computed here (db `markRecallableBehind` writes them with the calls' flags).
 */
export async function toolArgumentsToWrite(
  db: DbOrTx,
  sessionPk: number,
  from: number,
  before: number,
): Promise<Array<{ pk: number; words: string }>> {
  const { rows } = await executePrepared<{
    pk: number;
    tool: string;
    tool_status: string;
    tool_input: unknown;
  }>(
    db,
    sql`select pk, tool, tool_status, tool_input from parts
        where session_pk = ${sessionPk} and seq >= ${from}::int and seq < ${before}::int
          and type = 'tool' and recall_arguments is null`,
  );
  return rows.flatMap((row) => {
    const words = recallArgumentsOf({
      tool: row.tool,
      status: row.tool_status as ToolPart['status'],
      input: row.tool_input,
    });
    return words === null ? [] : [{ pk: Number(row.pk), words }];
  });
}
