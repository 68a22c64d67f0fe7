/**
 * One streamed Messages step relayed to the client: each server-sent event is passed on as the
 * provider wrote it, as it arrives, while the SDK's own `MessageStream` accumulates the step's
 * `Message` from the same events (read with the SDK's SSE parser, `Stream.rawEvents`, which keeps
 * each event's raw lines). The client must see one valid event sequence however many steps a
 * recall loop takes, so:
 * - `message_start` goes out once, from the first step; a later step's is dropped;
 * - with the recall tool offered, a `tool_use` block and every block after it wait for the step's
 *   `message_delta`: a step that calls `recall` is answered by Compactor and asked again, and the
 *   client never sees that call (nor the step's other calls, which it will make again), nor the
 *   step's `message_delta` / `message_stop`;
 * - content blocks are numbered in the client's stream, on from the blocks it already got; an
 *   event whose index changes is written again, any other goes out byte for byte;
 * - `message_stop`, which the pipeline sends once the answer is stored (a client that saw the end
 *   of the stream and retries gets the stored answer, not a second upstream call).
 */
import { Stream, type ServerSentEvent } from '@anthropic-ai/sdk/core/streaming';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type { Message, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import type { ClientStream } from './openai-stream-relay';

/** What the client's stream holds so far, across the steps of one answer. */
export interface ClientSequence {
  messageStarted: boolean;
  /** The next content block index in the client's stream. */
  nextIndex: number;
}

export interface AnthropicRelayOptions {
  /** Hold tool_use blocks until the step's end (the recall tool is offered). */
  holdToolUse: boolean;
  /** A tool the client must not see called (recall). */
  isHiddenTool(name: string): boolean;
}

export interface RelayedAnthropicStep {
  /** The step's answer as the SDK accumulated it (hidden calls included); null when the stream was cut short. */
  message: Message | null;
  /** The step called a hidden tool: its calls and its end (message_delta, message_stop) were not sent. */
  calledHidden: boolean;
  /** The upstream indexes of the blocks the client was sent, in order. */
  sentBlocks: number[];
  /** The raw `message_stop` event, held for the pipeline to send last; null when not sent. */
  stop: string | null;
}

type Held = { raw: string; event: IndexedEvent };
type IndexedEvent = Extract<RawMessageStreamEvent, { index: number }>;

/** An event as it came over the wire (the SDK keeps its lines; the blank line ends it). */
const rawEvent = (sse: ServerSentEvent): string => `${sse.raw.join('\n')}\n\n`;

export async function relayAnthropicStep(
  response: Response,
  client: ClientStream,
  sequence: ClientSequence,
  options: AnthropicRelayOptions,
): Promise<RelayedAnthropicStep> {
  const accumulator = sdkAccumulator();
  const clientIndex = new Map<number, number>();
  const held: Held[] = [];
  const sentBlocks: number[] = [];
  let calledHidden = false;
  let stop: string | null = null;
  const send = (raw: string, event: IndexedEvent) => {
    let index = clientIndex.get(event.index);
    if (index === undefined) {
      index = sequence.nextIndex++;
      clientIndex.set(event.index, index);
      sentBlocks.push(event.index);
    }
    client.write(
      index === event.index ? raw : `event: ${event.type}\ndata: ${JSON.stringify({ ...event, index })}\n\n`,
    );
  };

  for await (const sse of Stream.rawEvents(response)) {
    const event = parseEvent(sse.data);
    if (event === null) {
      // Not an event of the message (an error event, one added later): the client sees it as it came.
      client.write(rawEvent(sse));
      continue;
    }
    accumulator.add(event);
    switch (event.type) {
      case 'message_start':
        if (!sequence.messageStarted) client.write(rawEvent(sse));
        sequence.messageStarted = true;
        break;
      case 'content_block_start':
      case 'content_block_delta':
      case 'content_block_stop': {
        const startsHolding = event.type === 'content_block_start' && event.content_block.type === 'tool_use';
        if (options.holdToolUse && (held.length > 0 || startsHolding))
          held.push({ raw: rawEvent(sse), event });
        else send(rawEvent(sse), event);
        break;
      }
      case 'message_delta': {
        const calls = heldCalls(held);
        calledHidden = calls.some((call) => options.isHiddenTool(call.name));
        const toolUse = new Set(calls.map((call) => call.index));
        for (const { raw, event: heldEvent } of held.splice(0))
          // The step is asked again: only its blocks besides the calls reach the client.
          if (!calledHidden || !toolUse.has(heldEvent.index)) send(raw, heldEvent);
        if (!calledHidden) client.write(rawEvent(sse));
        break;
      }
      case 'message_stop':
        if (!calledHidden) stop = rawEvent(sse);
        break;
      default:
        client.write(rawEvent(sse));
    }
  }
  // A stream cut before its end: what was held goes out as it came.
  for (const { raw, event } of held) send(raw, event);
  return { message: await accumulator.finish(), calledHidden, sentBlocks, stop };
}

/** The tool_use blocks among held events, with their upstream index. */
function heldCalls(held: Held[]): { name: string; index: number }[] {
  return held.flatMap(({ event }) =>
    event.type === 'content_block_start' && event.content_block.type === 'tool_use'
      ? [{ name: event.content_block.name, index: event.index }]
      : [],
  );
}

function parseEvent(data: string): RawMessageStreamEvent | null {
  try {
    const value = JSON.parse(data) as unknown;
    if (value === null || typeof value !== 'object') return null;
    const type = (value as { type?: unknown }).type;
    return typeof type === 'string' && EVENT_TYPES.has(type) ? (value as RawMessageStreamEvent) : null;
  } catch {
    return null;
  }
}

const EVENT_TYPES = new Set([
  'message_start',
  'message_delta',
  'message_stop',
  'content_block_start',
  'content_block_delta',
  'content_block_stop',
]);

/**
 * The SDK's `MessageStream` fed the step's events, so the `Message` is put together exactly as
 * an Anthropic SDK client puts it together (deltas, signatures, tool input JSON, usage).
 */
function sdkAccumulator(): { add(event: RawMessageStreamEvent): void; finish(): Promise<Message | null> } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const events = new ReadableStream<Uint8Array>({ start: (c) => (controller = c) });
  const stream = MessageStream.fromReadableStream(events);
  // Its failures are read in finish(); without a listener the stream would report them unhandled.
  stream.on('error', () => {});
  const encoder = new TextEncoder();
  return {
    add: (event) => controller.enqueue(encoder.encode(`${JSON.stringify(event)}\n`)),
    async finish() {
      controller.close();
      return stream.finalMessage().catch(() => null);
    },
  };
}
