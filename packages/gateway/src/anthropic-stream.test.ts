/**
 * The Anthropic event streams the gateway writes: a stored message replayed as events, and an
 * upstream step relayed (byte for byte when nothing is hidden; one valid message across a recall
 * loop when something is), each read back with the SDK's own `MessageStream`, as a client reads it.
 */
import { describe, expect, it } from 'vitest';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type { Message } from '@anthropic-ai/sdk/resources/messages';
import { messageAsEvents } from './anthropic-replay';
import { relayAnthropicStep, type ClientSequence } from './anthropic-stream-relay';
import { isRecallTool } from './recall-loop';

function message(content: unknown[], stop: Message['stop_reason'] = 'end_turn'): Message {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: {
      input_tokens: 120,
      output_tokens: 40,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
  } as unknown as Message;
}

const thinking = { type: 'thinking', thinking: 'Which file?', signature: 'c2lnbmVk' };
const text = (value: string) => ({ type: 'text', text: value, citations: null });
const toolUse = (id: string, name: string, input: unknown) => ({ type: 'tool_use', id, name, input });

/** An SSE body as a client reads it: the SDK parses the `data:` of each event into its message. */
async function read(body: string): Promise<Message> {
  const lines = body
    .split('\n\n')
    .flatMap((event) => event.split('\n').filter((line) => line.startsWith('data: ')))
    .map((line) => line.slice(6))
    .filter((data) => JSON.parse(data).type !== 'ping');
  const stream = MessageStream.fromReadableStream(new Response(lines.join('\n')).body!);
  return stream.finalMessage();
}

/** An upstream answer streamed: the replayed events, with Anthropic's ping after the start. */
function upstream(answer: Message): Response {
  const [start, ...rest] = messageAsEvents(answer);
  const body = [start, 'event: ping\ndata: {"type": "ping"}\n\n', ...rest].join('');
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}

function recorder(): { write(text: string): void; text: string } {
  return {
    text: '',
    write(piece) {
      this.text += piece;
    },
  };
}

const options = (holdToolUse: boolean) => ({ holdToolUse, isHiddenTool: isRecallTool });

describe('a stored message replayed as events', () => {
  it('reads back as the same message: thinking with its signature, text, tool input, opaque blocks', async () => {
    const stored = message(
      [
        thinking,
        { type: 'redacted_thinking', data: 'b3BhcXVl' },
        text('Reading it.'),
        toolUse('toolu_1', 'read', { path: 'a.ts', lines: [1, 2], deep: { x: null } }),
      ],
      'tool_use',
    );
    const replayed = await read(messageAsEvents(stored).join(''));
    expect(replayed).toMatchObject(stored);
  });
});

describe('an upstream step relayed', () => {
  it('with nothing to hide: every event as it came, the stop held for the pipeline', async () => {
    const answer = message(
      [thinking, text('Reading it.'), toolUse('toolu_1', 'read', { path: 'a.ts' })],
      'tool_use',
    );
    const sent = await upstream(answer).clone().text();
    const client = recorder();
    const sequence: ClientSequence = { messageStarted: false, nextIndex: 0 };
    const step = await relayAnthropicStep(upstream(answer), client, sequence, options(true));
    expect(step.calledHidden).toBe(false);
    expect(step.message).toMatchObject(answer);
    expect(step.sentBlocks).toEqual([0, 1, 2]);
    expect(client.text + step.stop).toBe(sent);
  });

  it('a step that calls recall, then the step after it: one message, recall gone, blocks renumbered', async () => {
    const client = recorder();
    const sequence: ClientSequence = { messageStarted: false, nextIndex: 0 };
    const recalling = message(
      [
        thinking,
        text('Recalling toolu_0.'),
        toolUse('toolu_9', 'recall', { callId: 'toolu_0' }),
        toolUse('toolu_8', 'read', {}),
      ],
      'tool_use',
    );
    const first = await relayAnthropicStep(upstream(recalling), client, sequence, options(true));
    expect(first.calledHidden).toBe(true);
    expect(first.stop).toBeNull();
    expect(first.message!.content[2]).toMatchObject({ name: 'recall', input: { callId: 'toolu_0' } });
    expect(first.sentBlocks).toEqual([0, 1]);

    const answer = message([{ ...thinking, thinking: 'Now I know.' }, text('It says 42.')]);
    const second = await relayAnthropicStep(upstream(answer), client, sequence, options(true));
    expect(second.calledHidden).toBe(false);
    expect(second.sentBlocks).toEqual([0, 1]);

    const seen = await read(client.text + second.stop);
    expect(seen.content).toEqual([
      thinking,
      text('Recalling toolu_0.'),
      { ...thinking, thinking: 'Now I know.' },
      text('It says 42.'),
    ]);
    expect(seen.stop_reason).toBe('end_turn');
    expect(client.text.match(/event: message_start/g)).toHaveLength(1);
    expect(client.text).not.toContain('tool_use');
  });

  it('a stream cut short: what was held goes out, and there is no message to store', async () => {
    const answer = message([text('Reading it.'), toolUse('toolu_1', 'read', { path: 'a.ts' })], 'tool_use');
    const events = messageAsEvents(answer);
    const cut = events.slice(
      0,
      events.findIndex((event) => event.startsWith('event: message_delta')),
    );
    const client = recorder();
    const step = await relayAnthropicStep(
      new Response(cut.join(''), { headers: { 'content-type': 'text/event-stream' } }),
      client,
      { messageStarted: false, nextIndex: 0 },
      options(true),
    );
    expect(client.text).toBe(cut.join(''));
    expect(step.message).toBeNull();
    expect(step.stop).toBeNull();
  });

  it('an error event mid-stream reaches the client as the provider wrote it', async () => {
    const events = messageAsEvents(message([text('Half')]));
    const error =
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    const client = recorder();
    const step = await relayAnthropicStep(
      new Response(events.slice(0, 3).join('') + error, { headers: { 'content-type': 'text/event-stream' } }),
      client,
      { messageStarted: false, nextIndex: 0 },
      options(false),
    );
    expect(client.text).toBe(events.slice(0, 3).join('') + error);
    expect(step.message).toBeNull();
  });
});
