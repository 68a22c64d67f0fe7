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
