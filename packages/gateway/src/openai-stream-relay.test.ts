import { describe, expect, it } from 'vitest';
import { relayStreamedStep, type RelayOptions } from './openai-stream-relay';

const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' };
const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const text = (content: string) =>
  event({ ...base, choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const call = (index: number, id: string, name: string, args: string) =>
  event({
    ...base,
    choices: [
      {
        index: 0,
        delta: { tool_calls: [{ index, id, type: 'function', function: { name, arguments: args } }] },
        finish_reason: null,
      },
    ],
  });
const finish = (reason: string) =>
  event({ ...base, choices: [{ index: 0, delta: {}, finish_reason: reason }] });
const usage = event({
  ...base,
  choices: [],
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
});
const DONE = 'data: [DONE]\n\n';

/** A response whose body arrives in pieces cut anywhere, as a network delivers it. */
function responseOf(body: string, pieceLength = 7): Response {
  const bytes = new TextEncoder().encode(body);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += pieceLength)
        controller.enqueue(bytes.slice(at, at + pieceLength));
      controller.close();
    },
  });
  return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
}

async function relay(body: string, options: Partial<RelayOptions> = {}) {
  const written: string[] = [];
  const step = await relayStreamedStep(
    responseOf(body),
    new AbortController(),
    { write: (t) => written.push(t) },
    {
      holdToolCalls: false,
      forwardUsage: true,
      isHiddenTool: (name) => name === 'recall',
      ...options,
    },
  );
  return { written: written.join(''), step };
}

describe('relayStreamedStep', () => {
  it('passes every event on as it came, holds [DONE] for the caller, and accumulates the completion', async () => {
    const events = [
      text('Hel'),
      text('lo'),
      call(0, 'c1', 'read', '{"pa'),
      call(0, '', '', 'th":1}'),
      finish('tool_calls'),
      usage,
    ];
    const { written, step } = await relay([...events, DONE].join(''), { holdToolCalls: true });
    expect(written).toBe(events.join(''));
    expect(step.done).toBe(DONE);
    expect(step.hiddenCalls).toEqual([]);
    expect(step.completion).toMatchObject({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: [
        {
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: 'Hello',
            tool_calls: [{ id: 'c1', function: { name: 'read', arguments: '{"path":1}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 10 },
    });
  });

  it('drops the usage chunk the client did not ask for', async () => {
    const { written, step } = await relay([text('Hi'), finish('stop'), usage, DONE].join(''), {
      forwardUsage: false,
    });
    expect(written).toBe(text('Hi') + finish('stop'));
    expect(step.completion.usage).toMatchObject({ total_tokens: 12 });
  });

  it('a step that calls recall: its text reaches the client, its calls, end and usage do not', async () => {
    const body = [
      text('Recalling.'),
      call(0, 'r1', 'recall', '{"callId":"c7"}'),
      finish('tool_calls'),
      usage,
      DONE,
    ].join('');
    const { written, step } = await relay(body, { holdToolCalls: true });
    expect(written).toBe(text('Recalling.'));
    expect(step.hiddenCalls.map((c) => c.id)).toEqual(['r1']);
    expect(step.done).toBeNull();
    expect(step.sentContent).toBe('Recalling.');
  });

  it('holds text that follows a call until the step ends, so the order is kept', async () => {
    const events = [call(0, 'c1', 'read', '{}'), text('after'), finish('tool_calls')];
    const { written } = await relay([...events, DONE].join(''), { holdToolCalls: true });
    expect(written).toBe(events.join(''));
  });

  it('passes an error event and a stream cut before its end as they came, in their order', async () => {
    const error = event({ error: { message: 'overloaded', type: 'server_error' } });
    const { written, step } = await relay(text('Par') + call(0, 'c1', 'read', '{}') + error, {
      holdToolCalls: true,
    });
    expect(written).toBe(text('Par') + call(0, 'c1', 'read', '{}') + error);
    expect(step.done).toBeNull();
  });
});
