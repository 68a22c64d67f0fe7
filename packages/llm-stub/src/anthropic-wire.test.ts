import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { thinkingSignature } from './anthropic-wire';
import type { LlmStub } from './server';
import { startLlmStub } from './server';

let stub: LlmStub;
let client: Anthropic;

beforeAll(async () => {
  stub = await startLlmStub({ streamPieceChars: 5 });
  client = new Anthropic({ baseURL: stub.origin, apiKey: 'sk-ant-stub', maxRetries: 0 });
});
afterAll(() => stub.close());

const tokens = (text: string): number => Math.ceil(text.length / 4);

/** Every kind of block a client sends back, with `cache_control` where Claude Code puts it. */
const richConversation: MessageParam[] = [
  {
    role: 'user',
    content: [
      { type: 'text', text: 'Look at the screenshot.', cache_control: { type: 'ephemeral' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
    ],
  },
  {
    role: 'assistant',
    content: [
      {
        type: 'thinking',
        thinking: 'I should read the file.',
        signature: thinkingSignature('I should read the file.'),
      },
      { type: 'redacted_thinking', data: 'b3BhcXVl' },
      { type: 'text', text: 'Reading.' },
      { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'src/a.ts' } },
    ],
  },
  {
    role: 'user',
    content: [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_a',
        content: [{ type: 'text', text: 'export const a = 1;' }],
        cache_control: { type: 'ephemeral', ttl: '5m' },
      },
      { type: 'text', text: 'What does it export?' },
    ],
  },
];

describe('the Anthropic Messages protocol (@anthropic-ai/sdk)', () => {
  it('answers with a Message and the stub estimator usage', async () => {
    const message = await client.messages.create({
      model: 'stub-claude',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'stub-claude',
      content: [{ type: 'text', text: 'Stub reply to: Hello there' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: tokens('Be brief.') + 4 + tokens('Hello there') + 4 + 3,
        output_tokens: tokens('Stub reply to: Hello there'),
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
    });
    expect(message.id).toMatch(/^msg_stub_\d+$/);
  });

  it('reads every block kind, system blocks and cache_control, and records them', async () => {
    const message = await client.messages.create({
      model: 'stub-claude',
      max_tokens: 100,
      system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
      messages: richConversation,
    });
    expect(message.content).toEqual([
      { type: 'text', text: 'Stub reply to: What does it export?', citations: null },
    ]);
    const record = stub.requests.at(-1)!;
    expect(record).toMatchObject({
      protocol: 'anthropic',
      model: 'stub-claude',
      maxTokens: 100,
      toolNames: [],
    });
    expect(record.messages).toEqual([
      { role: 'system', text: 'You are a coding agent.', toolCalls: [], toolResults: [] },
      { role: 'user', text: 'Look at the screenshot.', toolCalls: [], toolResults: [] },
      {
        role: 'assistant',
        text: 'Reading.',
        toolCalls: [{ id: 'toolu_a', name: 'read_file', arguments: '{"path":"src/a.ts"}' }],
        toolResults: [],
      },
      {
        role: 'user',
        text: 'What does it export?',
        toolCalls: [],
        toolResults: [{ callId: 'toolu_a', output: 'export const a = 1;', isError: false }],
      },
    ]);
    // Tool calls and results count towards the prompt like text does.
    const assistantText = 'Reading.' + 'read_file' + '{"path":"src/a.ts"}';
    const resultText = 'What does it export?' + 'export const a = 1;';
    expect(message.usage.input_tokens).toBe(
      [
        tokens('You are a coding agent.'),
        tokens('Look at the screenshot.'),
        tokens(assistantText),
        tokens(resultText),
      ]
        .map((n) => n + 4)
        .reduce((a, b) => a + b, 3),
    );
  });

  it('streams the same message the SDK assembles as the one it answers whole', async () => {
    const params: MessageCreateParamsNonStreaming = {
      model: 'stub-claude',
      max_tokens: 500,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      tools: [{ name: 'read_file', input_schema: { type: 'object', properties: {} } }],
      messages: [{ role: 'user', content: 'Fix the failing test.' }],
    };
    const whole = await client.messages.create(params);
    const streamed = await client.messages.stream(params).finalMessage();
    const { id: _a, ...wholeRest } = whole;
    const { id: _b, ...streamedRest } = streamed;
    expect(streamedRest).toMatchObject(wholeRest);
    expect(whole.content.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(whole.stop_reason).toBe('tool_use');
  });

  it('streams the exact event sequence, each event named as its data type', async () => {
    const response = await fetch(`${stub.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
      body: JSON.stringify({
        model: 'stub-claude',
        max_tokens: 500,
        stream: true,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools: [{ name: 'bash', input_schema: { type: 'object' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Run the tests.' }] }],
      }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text())
      .split('\n\n')
      .filter((event) => event !== '')
      .map((event) => {
        const [name, data] = event.split('\n');
        const parsed = JSON.parse(data!.replace(/^data: /, '')) as { type: string; delta?: { type: string } };
        expect(name).toBe(`event: ${parsed.type}`);
        return parsed.type === 'content_block_delta' ? parsed.delta!.type : parsed.type;
      });
    const collapsed = events.filter((type, at) => type !== events[at - 1]);
    expect(collapsed).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'thinking_delta',
      'signature_delta',
      'content_block_stop',
      'content_block_start',
      'text_delta',
      'content_block_stop',
      'content_block_start',
      'input_json_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events.filter((type) => type === 'input_json_delta').length).toBeGreaterThan(1);
  });

  it('stops at max_tokens with stop_reason max_tokens', async () => {
    const message = await client.messages.create({
      model: 'stub-claude',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'Tell me everything about the repository.' }],
    });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.content).toEqual([{ type: 'text', text: 'Stub rep', citations: null }]);
  });

  it.each<[string, unknown]>([
    ['no max_tokens', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }],
    ['no messages', { model: 'm', max_tokens: 10, messages: [] }],
    [
      'a system role in messages',
      { model: 'm', max_tokens: 10, messages: [{ role: 'system', content: 'x' }] },
    ],
    [
      'a tool_use without an id',
      {
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'assistant', content: [{ type: 'tool_use', name: 'read', input: {} }] }],
      },
    ],
    [
      'a tool_result without its call id',
      {
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }],
      },
    ],
  ])('refuses %s with an invalid_request_error and records nothing', async (_name, body) => {
    const before = stub.stats.requests;
    const response = await fetch(`${stub.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(stub.stats.requests).toBe(before);
  });

  it('refuses thinking handed back altered, as Anthropic refuses a signature that does not match', async () => {
    const thinking = {
      type: 'thinking' as const,
      thinking: 'Plan: read it.',
      signature: thinkingSignature('Plan: read it.'),
    };
    const conversation = (block: typeof thinking): MessageParam[] => [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [block, { type: 'text', text: 'Done.' }] },
      { role: 'user', content: 'next' },
    ];
    const params = { model: 'stub-claude', max_tokens: 50 };
    expect((await client.messages.create({ ...params, messages: conversation(thinking) })).type).toBe(
      'message',
    );
    const before = stub.stats.requests;
    const altered = client.messages.create({
      ...params,
      messages: conversation({ ...thinking, thinking: 'Plan: skip it.' }),
    });
    await expect(altered).rejects.toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      message: expect.stringContaining('messages.1.content.0: Invalid `signature` in `thinking` block'),
    });
    expect(stub.stats.requests).toBe(before);
  });

  it('refuses a body that is not JSON in its own shape', async () => {
    const response = await fetch(`${stub.origin}/v1/messages`, { method: 'POST', body: '{"model":' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'The request body is not valid JSON.' },
    });
  });

  it('takes its API key as x-api-key', async () => {
    const locked = await startLlmStub({ apiKey: 'sk-ant-right' });
    try {
      const params = { model: 'm', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
      const right = new Anthropic({ baseURL: locked.origin, apiKey: 'sk-ant-right', maxRetries: 0 });
      expect((await right.messages.create(params)).type).toBe('message');
      const wrong = new Anthropic({ baseURL: locked.origin, apiKey: 'sk-ant-wrong', maxRetries: 0 });
      await expect(wrong.messages.create(params)).rejects.toMatchObject({
        status: 401,
        type: 'authentication_error',
      });
    } finally {
      await locked.close();
    }
  });
});
