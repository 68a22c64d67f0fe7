/**
 * One streamed upstream step relayed to the client: each server-sent event is passed on as the
 * provider wrote it, as it arrives, while the SDK's own SSE parser (`_iterSSEMessages`, which
 * also hands back each event's raw lines) feeds the accumulator. What is held back or dropped,
 * and why:
 * - tool-call deltas, when the recall tool is offered, wait for the step's end: a step that calls
 *   `recall` is answered by Compactor and asked again, and the client must never see that call;
 * - the usage chunk, when only Compactor asked for it (`stream_options.include_usage` forced on);
 * - `data: [DONE]`, which the pipeline sends once the answer is stored (a client that saw the end
 *   of the stream and retries gets the stored answer, not a second upstream call).
 */
import { _iterSSEMessages, type ServerSentEvent } from 'openai/core/streaming';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';
import { ChatChunkAccumulator } from './chat-chunks';

/** Where relayed events go: the client's response. */
export interface ClientStream {
  write(text: string): void;
}

export interface RelayOptions {
  /** Hold tool-call deltas until the step ends (the recall tool is offered). */
  holdToolCalls: boolean;
  /** Pass the usage chunk on: the client asked for it. */
  forwardUsage: boolean;
  /** A tool the client must not see called (recall). */
  isHiddenTool(name: string): boolean;
}

export interface RelayedStep {
  /** The step's answer, accumulated from every chunk (hidden calls included). */
  completion: ChatCompletion;
  /** The hidden tool calls the step made; when any, its end (finish, usage, [DONE]) was not sent. */
  hiddenCalls: ChatCompletionMessageFunctionToolCall[];
  /** The text content the client was sent. */
  sentContent: string;
  /** The raw `[DONE]` event, held for the pipeline to send last; null when the provider sent none. */
  done: string | null;
}

/** An event as it came over the wire (the SDK keeps its lines; the blank line ends it). */
const rawEvent = (sse: ServerSentEvent): string => `${sse.raw.join('\n')}\n\n`;

const hasToolCalls = (chunk: ChatCompletionChunk) =>
  chunk.choices.some((c) => (c.delta?.tool_calls?.length ?? 0) > 0);
const finishes = (chunk: ChatCompletionChunk) => chunk.choices.some((c) => c.finish_reason);

export async function relayStreamedStep(
  response: Response,
  controller: AbortController,
  client: ClientStream,
  options: RelayOptions,
): Promise<RelayedStep> {
  const answer = new ChatChunkAccumulator();
  const held: { raw: string; chunk: ChatCompletionChunk | null }[] = [];
  let hidden: ChatCompletionMessageFunctionToolCall[] = [];
  let sentContent = '';
  let done: string | null = null;
  const send = (raw: string, chunk: ChatCompletionChunk | null) => {
    for (const choice of chunk?.choices ?? [])
      if (choice.index === 0) sentContent += choice.delta?.content ?? '';
    client.write(raw);
  };

  for await (const sse of _iterSSEMessages(response, controller)) {
    if (sse.data.startsWith('[DONE]')) {
      done = rawEvent(sse);
      continue;
    }
    const chunk = parseChunk(sse.data);
    // Not a chunk (an error event, a comment the provider sends): the client sees it as it came,
    // in its place among what is held.
    if (chunk === null) {
      if (held.length > 0) held.push({ raw: rawEvent(sse), chunk: null });
      else send(rawEvent(sse), null);
      continue;
    }
    answer.add(chunk);
    if (chunk.choices.length === 0) {
      if (chunk.usage && (!options.forwardUsage || hidden.length > 0)) continue;
      send(rawEvent(sse), chunk);
      continue;
    }
    if (!options.holdToolCalls || (!hasToolCalls(chunk) && !finishes(chunk) && held.length === 0)) {
      send(rawEvent(sse), chunk);
      continue;
    }
    held.push({ raw: rawEvent(sse), chunk });
    if (!finishes(chunk)) continue;
    hidden = answer.toolCalls().filter((call) => options.isHiddenTool(call.function.name));
    for (const event of held.splice(0)) {
      if (hidden.length === 0 || event.chunk === null) send(event.raw, event.chunk);
      else {
        // The step is asked again: only its text reaches the client, without the calls or the end.
        const text = withoutCallsAndFinish(event.chunk);
        if (text) send(`data: ${JSON.stringify(text)}\n\n`, text);
      }
    }
  }
  // A stream cut before its end: what was held goes out as it came.
  for (const event of held) send(event.raw, event.chunk);
  return {
    completion: answer.completion(),
    hiddenCalls: hidden,
    sentContent,
    done: hidden.length > 0 ? null : done,
  };
}

function parseChunk(data: string): ChatCompletionChunk | null {
  try {
    const value = JSON.parse(data) as unknown;
    if (value === null || typeof value !== 'object' || !Array.isArray((value as ChatCompletionChunk).choices))
      return null;
    return value as ChatCompletionChunk;
  } catch {
    return null;
  }
}

/** The chunk's text deltas alone, or null when it has none. */
function withoutCallsAndFinish(chunk: ChatCompletionChunk): ChatCompletionChunk | null {
  const choices = chunk.choices
    .filter((choice) => typeof choice.delta?.content === 'string' && choice.delta.content !== '')
    .map((choice) => ({ ...choice, delta: { content: choice.delta.content }, finish_reason: null }));
  return choices.length === 0 ? null : { ...chunk, choices };
}
