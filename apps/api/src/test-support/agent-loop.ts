import { createHash } from 'node:crypto';
import type OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';

/** The one tool the agent offers: the stub's agent mode calls the first tool offered. */
export const READ_TOOL: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'read',
    description: 'Reads a file of the repository',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
};

export const SYSTEM_PROMPT = 'You are a coding agent. Read the files you need before you answer.';

/**
 * A file's content as the agent's tool returns it: about 1,200 characters of numbered hex lines,
 * a different text for every path. Hex reads as more tokens than the stub's four characters a
 * token, so the stub never counts a prompt larger than Compactor does.
 */
export function fileContent(path: string): string {
  return Array.from(
    { length: 26 },
    (_, line) => `L${line} ${createHash('sha256').update(`${path}:${line}`).digest('hex').slice(0, 40)}`,
  ).join('\n');
}

/** What the client saw of one model call. */
export interface SeenAnswer {
  /** The completion (non-streaming), or the chunks in order (streaming). */
  completion?: ChatCompletion;
  chunks?: ChatCompletionChunk[];
  message: ChatCompletionMessage;
}

export interface AgentLoopResult {
  /** The conversation as the client holds it at the end. */
  messages: ChatCompletionMessageParam[];
  answers: SeenAnswer[];
}

/**
 * A tool-using agent loop through the official SDK, `calls` model calls long: each user turn asks
 * for a task, the model reads a file (the stub in agent mode), the agent answers the call with the
 * file's content, the model sums up. The client sends its whole conversation every call, as an
 * agent does; `firstHeaders` go with the first call only. `project` names the work in the system
 * prompt: loops of different projects share no history.
 */
export async function runAgentLoop(
  client: OpenAI,
  options: {
    calls: number;
    stream: boolean;
    project: string;
    firstHeaders?: Record<string, string>;
    model?: string;
  },
): Promise<AgentLoopResult> {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: `${SYSTEM_PROMPT} Project: ${options.project}.` },
  ];
  const answers: SeenAnswer[] = [];
  let task = 0;
  for (let call = 0; call < options.calls; call++) {
    const last = messages.at(-1);
    if (last?.role !== 'tool')
      messages.push({ role: 'user', content: `Task ${++task}: fix the bug in module ${task}.` });
    const headers = call === 0 ? options.firstHeaders : undefined;
    const body = {
      model: options.model ?? 'gpt-4o',
      messages: [...messages],
      tools: [READ_TOOL],
      max_tokens: 1024,
    };
    const answer = options.stream
      ? await streamed(client, body, headers)
      : await whole(client, body, headers);
    answers.push(answer);
    messages.push(answer.message);
    for (const toolCall of answer.message.tool_calls ?? []) {
      if (toolCall.type !== 'function') continue;
      const { path } = JSON.parse(toolCall.function.arguments) as { path: string };
      messages.push({ role: 'tool', tool_call_id: toolCall.id, content: fileContent(path) });
    }
  }
  return { messages, answers };
}

type Body = {
  model: string;
  messages: ChatCompletionMessageParam[];
  tools: ChatCompletionTool[];
  max_tokens: number;
};

async function whole(
  client: OpenAI,
  body: Body,
  headers: Record<string, string> | undefined,
): Promise<SeenAnswer> {
  const completion = await client.chat.completions.create(body, headers ? { headers } : {});
  return { completion, message: completion.choices[0]!.message };
}

async function streamed(
  client: OpenAI,
  body: Body,
  headers: Record<string, string> | undefined,
): Promise<SeenAnswer> {
  const runner = client.chat.completions.stream(
    { ...body, stream: true, stream_options: { include_usage: true } },
    headers ? { headers } : {},
  );
  const chunks: ChatCompletionChunk[] = [];
  runner.on('chunk', (chunk) => chunks.push(chunk));
  const completion = await runner.finalChatCompletion();
  return { chunks, message: completion.choices[0]!.message as ChatCompletionMessage };
}

/** The chunks of a raw SSE body, `[DONE]` left out. */
export function sseChunks(body: string): ChatCompletionChunk[] {
  return body
    .split(/\n\n/)
    .map((event) =>
      event
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice(6),
    )
    .filter((data): data is string => data !== undefined && data !== '[DONE]')
    .map((data) => JSON.parse(data) as ChatCompletionChunk);
}
