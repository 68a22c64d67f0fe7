import { artifactsOfToolPart, type ToolPart } from '@compactor/core';

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
