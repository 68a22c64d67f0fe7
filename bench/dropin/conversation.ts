/**
 * The drop-in benchmark's client side: a tool-using coding-agent conversation as an agent holds
 * it (Chat Completions messages, the whole list sent every turn), built to any length at once,
 * and its next turn taken through the official `openai` SDK.
 */
import { createHash } from 'node:crypto';
import type OpenAI from 'openai';
import type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';

/** The agent's one tool: the stub's agent mode calls the first tool a request offers. */
export const READ_TOOL: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'read',
    description: 'Reads a file of the repository',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
};

/** A file as the agent's tool returns it: ~1,200 characters of numbered hex lines, its own per path. */
export function fileContent(path: string): string {
  return Array.from(
    { length: 26 },
    (_, line) => `L${line} ${createHash('sha256').update(`${path}:${line}`).digest('hex').slice(0, 40)}`,
  ).join('\n');
}

/**
 * `count` messages of a coding agent's conversation about `project`: a system prompt, then tasks
 * of four messages (the user's request, the assistant's `read` call, its result, the assistant's
 * answer), cut to end on a user request, so the next call asks the model. Conversations of
 * projects whose names have the same length have the same size in bytes.
 */
export function agentHistory(project: string, count: number): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [
    {
      role: 'system',
      content: `You are a coding agent. Read the files you need first. Project: ${project}.`,
    },
  ];
  for (let task = 1; messages.length < count; task++) {
    const path = `src/${project}/module-${task}.ts`;
    const id = `call_${project}_${task}`;
    messages.push({ role: 'user', content: `Task ${task}: fix the bug in module ${task}.` });
    if (messages.length === count) break;
    messages.push({
      role: 'assistant',
      content: `Looking at ${path}.`,
      tool_calls: [{ id, type: 'function', function: { name: 'read', arguments: JSON.stringify({ path }) } }],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: fileContent(path) });
    messages.push({ role: 'assistant', content: `Fixed the off-by-one in ${path}.` });
  }
  // End on a user request: the conversation's next call is the model's turn.
  while (messages.at(-1)?.role !== 'user') messages.pop();
  return messages;
}

/** The conversation one agent holds: its messages, and what its next call adds after an answer. */
export class AgentConversation {
  readonly messages: ChatCompletionMessageParam[];
  private tasks = 0;

  constructor(
    readonly project: string,
    history: number,
  ) {
    this.messages = agentHistory(project, history);
  }

  /** The body of the next call (a copy: the SDK may hold on to it). */
  body(): { model: string; messages: ChatCompletionMessageParam[]; tools: ChatCompletionTool[] } {
    return { model: 'gpt-4o', messages: [...this.messages], tools: [READ_TOOL] };
  }

  /** Takes in the model's answer as an agent does: its tool calls answered, else a new request. */
  answered(message: ChatCompletionMessage): void {
    this.messages.push(message);
    const calls = (message.tool_calls ?? []).filter((call) => call.type === 'function');
    for (const call of calls) {
      const { path } = JSON.parse(call.function.arguments) as { path: string };
      this.messages.push({ role: 'tool', tool_call_id: call.id, content: fileContent(path) });
    }
    if (calls.length === 0)
      this.messages.push({ role: 'user', content: `Next task ${++this.tasks}: run the tests again.` });
  }
}

/** One call through the SDK, whole or streamed to its end: the answer's message. */
export async function callModel(
  client: OpenAI,
  conversation: AgentConversation,
  stream: boolean,
): Promise<ChatCompletionMessage> {
  if (!stream) {
    const completion = await client.chat.completions.create(conversation.body());
    return completion.choices[0]!.message;
  }
  const runner = client.chat.completions.stream({
    ...conversation.body(),
    stream: true,
    stream_options: { include_usage: true },
  });
  const completion = await runner.finalChatCompletion();
  return completion.choices[0]!.message as ChatCompletionMessage;
}

/**
 * Messages `from`…`from + count − 1` of a tool-using history in the messages API's format
 * (a user request, then an assistant's `read` call with its ~1.2 KB result), for a session
 * stored through that API rather than the drop-in route.
 */
export function storedHistoryBatch(from: number, count: number): unknown[] {
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    if (n % 2 === 0)
      return { id: `s${n}`, role: 'user', parts: [{ type: 'text', text: `Task ${n}: fix module ${n}.` }] };
    const path = `src/stored/module-${n}.ts`;
    return {
      id: `s${n}`,
      role: 'assistant',
      finish: 'tool-calls',
      parts: [
        { type: 'text', text: `Looking at ${path}.` },
        {
          type: 'tool',
          callId: `call_s${n}`,
          tool: 'read',
          status: 'completed',
          input: { path },
          output: fileContent(path),
        },
      ],
    };
  });
}
