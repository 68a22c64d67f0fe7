/**
 * One request as the stub reads it, whichever protocol carried it (Chat Completions or Anthropic
 * Messages): messages with their text, tool calls and tool results, and the offered tools. The
 * answers, the token estimate and the request records are all computed from this shape, so both
 * protocols behave the same.
 */

export type StubProtocol = 'openai' | 'anthropic';

export interface StubToolCallPart {
  id: string;
  name: string;
  /** The arguments as JSON text (Anthropic's `input` object is serialised). */
  arguments: string;
}

export interface StubToolResult {
  callId: string;
  /** The result's text (text blocks joined; images and other blocks contribute nothing). */
  output: string;
  isError: boolean;
}

export interface StubMessage {
  /** `system`, `user`, `assistant`, `tool` (Chat only), or whatever else the client sent. */
  role: string;
  /** Text content (text blocks joined). A Chat `tool` message's text is its result. */
  text: string;
  toolCalls: StubToolCallPart[];
  toolResults: StubToolResult[];
}

export interface StubRequest {
  protocol: StubProtocol;
  model: string;
  stream: boolean;
  maxTokens: number | null;
  /** Chat only: `stream_options.include_usage`. Anthropic streams always carry usage. */
  includeUsage: boolean;
  /** System prompt first (Anthropic's `system` becomes a `system` message). */
  messages: StubMessage[];
  /** Names of the offered tools, in the order offered. */
  toolNames: string[];
  /** Anthropic `thinking` enabled: the answer starts with a signed thinking block. */
  thinkingEnabled: boolean;
}

export function stubMessage(role: string, text: string, extra: Partial<StubMessage> = {}): StubMessage {
  return { role, text, toolCalls: [], toolResults: [], ...extra };
}

/** The text a model reads of one message: its text, its tool calls and its tool results. */
export function promptTextOf(message: StubMessage): string {
  const calls = message.toolCalls.map((call) => call.name + call.arguments).join('');
  // A Chat `tool` message's text already is its result.
  const results = message.role === 'tool' ? '' : message.toolResults.map((result) => result.output).join('');
  return message.text + calls + results;
}

export interface ToolPairing {
  /** Calls not answered by the message(s) right after the assistant message that made them. */
  unansweredCalls: string[];
  /** Results that answer no call of the assistant message right before them. */
  orphanResults: string[];
}

/**
 * Whether every tool call is answered right after it, as both providers require: a Chat
 * assistant message's calls by the `tool` messages that follow it, an Anthropic assistant
 * message's `tool_use` blocks by the `tool_result` blocks of the next user message. Tests read
 * it off the recorded requests to show an upstream request never carried a half-cut exchange.
 */
export function toolPairing(messages: readonly StubMessage[]): ToolPairing {
  const unansweredCalls: string[] = [];
  const orphanResults: string[] = [];
  let open = new Set<string>();
  let answering = false;
  for (const message of messages) {
    if (message.toolResults.length > 0 && (answering || message.role === 'tool')) {
      for (const result of message.toolResults) {
        if (open.delete(result.callId)) continue;
        orphanResults.push(result.callId);
      }
      // Chat answers a call per `tool` message; an Anthropic user message answers them all at once.
      answering = message.role === 'tool';
      if (!answering) closeOpen();
      continue;
    }
    closeOpen();
    if (message.toolResults.length > 0) orphanResults.push(...message.toolResults.map((r) => r.callId));
    open = new Set(message.toolCalls.map((call) => call.id));
    answering = open.size > 0;
  }
  closeOpen();
  return { unansweredCalls, orphanResults };

  function closeOpen(): void {
    unansweredCalls.push(...open);
    open = new Set();
    answering = false;
  }
}
