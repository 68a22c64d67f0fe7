import type { Message, Part, ToolPart } from '@compactor/core';

/** Small builders for stored messages in tests: token counts are estimates, ids follow `seq`. */

let nextSeq = 1;

function message(role: Message['role'], parts: Part[], extra: Partial<Message> = {}): Message {
  const seq = nextSeq++;
  return {
    id: `m${seq}`,
    seq,
    role,
    parts,
    finish: role === 'assistant' ? 'stop' : null,
    error: null,
    usage: null,
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, seq)).toISOString(),
    metadata: {},
    summary: false,
    compactionId: null,
    ...extra,
  };
}

export function user(text: string): Message {
  return message('user', [{ type: 'text', text, tokens: Math.ceil(text.length / 4) }]);
}

export function assistant(text: string, ...tools: ToolPart[]): Message {
  const parts: Part[] = text === '' ? [] : [{ type: 'text', text, tokens: Math.ceil(text.length / 4) }];
  return message('assistant', [...parts, ...tools], tools.length > 0 ? { finish: 'tool-calls' } : {});
}

export function tool(
  name: string,
  input: unknown,
  output: string,
  status: ToolPart['status'] = 'completed',
): ToolPart {
  const tokens = Math.ceil((name.length + JSON.stringify(input).length + output.length) / 4);
  return {
    type: 'tool',
    callId: `call-${nextSeq}-${name}`,
    tool: name,
    status,
    input,
    output: status === 'completed' ? output : null,
    error: status === 'error' ? output : null,
    compactedAt: null,
    tokens,
    outputTokens: Math.ceil(output.length / 4),
  };
}

/**
 * A long coding session: the first turn states the goal, a constraint and reads `src/first.ts`;
 * each later turn asks for one more file, reads it (a tool output of `outputChars`) and edits it.
 */
export function longSession(turns: number, outputChars = 1200): Message[] {
  const messages: Message[] = [
    user('Build the invoice exporter for the billing service. Never use floating point for money amounts.'),
    assistant(
      'Reading the entry point first.',
      tool('read', { path: 'src/first.ts' }, 'export const first = 1;\n'.repeat(outputChars / 24)),
    ),
  ];
  for (let turn = 1; turn < turns; turn += 1) {
    messages.push(
      user(`Continue with step ${turn}: handle the export format number ${turn}.`),
      assistant(
        `Looking at module ${turn}.`,
        tool('read', { path: `src/module-${turn}.ts` }, `// module ${turn}\n`.repeat(outputChars / 14)),
        tool('edit', { path: `src/module-${turn}.ts`, old: 'a', new: 'b' }, 'applied'),
      ),
    );
  }
  return messages;
}
