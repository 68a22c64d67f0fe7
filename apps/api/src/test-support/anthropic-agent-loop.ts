import type Anthropic from '@anthropic-ai/sdk';
import type {
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
  RawMessageStreamEvent,
  Tool,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import { fileContent, SYSTEM_PROMPT } from './agent-loop';

/** The one tool the agent offers: the stub's agent mode calls the first tool offered. */
export const ANTHROPIC_READ_TOOL: Tool = {
  name: 'read',
  description: 'Reads a file of the repository',
  input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

/** What the client saw of one model call. */
export interface SeenMessage {
  message: Message;
  /** Streaming: the events the SDK read, in order. */
  events?: RawMessageStreamEvent[];
}

export interface AnthropicLoopResult {
  system: string;
  /** The conversation as the client holds it at the end. */
  messages: MessageParam[];
  answers: SeenMessage[];
}

/**
 * A tool-using agent loop through the official Anthropic SDK, `calls` model calls long, thinking
 * on: each user turn asks for a task, the model thinks and reads a file (the stub in agent mode),
 * the agent answers the call with the file's content, the model sums up. The client sends its
 * whole conversation every call and echoes each answer verbatim (thinking signatures included),
 * as an agent does; `firstHeaders` go with the first call only.
 */
export async function runAnthropicAgentLoop(
  client: Anthropic,
  options: { calls: number; stream: boolean; project: string; firstHeaders?: Record<string, string> },
): Promise<AnthropicLoopResult> {
  const system = `${SYSTEM_PROMPT} Project: ${options.project}.`;
  const messages: MessageParam[] = [];
  const answers: SeenMessage[] = [];
  let task = 0;
  for (let call = 0; call < options.calls; call++) {
    if (!endsWithToolResults(messages))
      messages.push({ role: 'user', content: `Task ${++task}: fix the bug in module ${task}.` });
    const body: MessageCreateParamsNonStreaming = {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      system,
      messages: [...messages],
      tools: [ANTHROPIC_READ_TOOL],
      thinking: { type: 'adaptive' },
    };
    const requestOptions = call === 0 && options.firstHeaders ? { headers: options.firstHeaders } : {};
    const answer = options.stream
      ? await streamed(client, body, requestOptions)
      : { message: await client.messages.create(body, requestOptions) };
    answers.push(answer);
    messages.push({ role: 'assistant', content: answer.message.content });
    const results = answer.message.content.flatMap((block): ToolResultBlockParam[] =>
      block.type === 'tool_use'
        ? [
            {
              type: 'tool_result',
              tool_use_id: block.id,
              content: fileContent((block.input as { path: string }).path),
            },
          ]
        : [],
    );
    if (results.length > 0) messages.push({ role: 'user', content: results });
  }
  return { system, messages, answers };
}

async function streamed(
  client: Anthropic,
  body: MessageCreateParamsNonStreaming,
  requestOptions: { headers?: Record<string, string> },
): Promise<SeenMessage> {
  const events: RawMessageStreamEvent[] = [];
  // A copy as it arrives: the SDK builds its message snapshot inside the message_start event.
  const stream = client.messages
    .stream(body, requestOptions)
    .on('streamEvent', (event) => events.push(structuredClone(event)));
  return { message: await stream.finalMessage(), events };
}

export function endsWithToolResults(messages: readonly MessageParam[]): boolean {
  const last = messages.at(-1);
  return (
    last?.role === 'user' &&
    Array.isArray(last.content) &&
    last.content.some((block) => block.type === 'tool_result')
  );
}

/** The events of a raw Messages SSE body, pings left out (the SDK skips them too). */
export function sseEvents(body: string): RawMessageStreamEvent[] {
  return body
    .split(/\n\n/)
    .map((event) =>
      event
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice(6),
    )
    .filter((data): data is string => data !== undefined)
    .map((data) => JSON.parse(data) as RawMessageStreamEvent | { type: 'ping' })
    .filter((event): event is RawMessageStreamEvent => event.type !== 'ping');
}
