import Anthropic, { APIError } from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { detectOverflowError } from '@compactor/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LlmStub } from './server';
import { startLlmStub } from './server';

let stub: LlmStub;
let client: Anthropic;

beforeAll(async () => {
  stub = await startLlmStub();
  client = new Anthropic({ baseURL: stub.origin, apiKey: 'sk-ant-stub', maxRetries: 0 });
});
afterAll(() => stub.close());
afterEach(() => stub.setFaults({}));

const params: MessageCreateParamsNonStreaming = {
  model: 'stub-claude',
  max_tokens: 100,
  system: 'You are a coding agent.',
  messages: [{ role: 'user', content: 'Summarise the design document in one line, please.' }],
};

const create = (headers: Record<string, string>) => client.messages.create(params, { headers });
const stream = (headers: Record<string, string>) =>
  client.messages.stream(params, { headers }).finalMessage();

async function apiError(request: Promise<unknown>): Promise<APIError> {
  const error = await request.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!(error instanceof APIError)) throw new Error(`expected an APIError, got ${String(error)}`);
  return error;
}

describe('faults over the Anthropic protocol', () => {
  it.each([
    [{ 'x-stub-status': '429', 'x-stub-retry-after': '7' }, 429, 'rate_limit_error', '7'],
    [{ 'x-stub-status': '529' }, 529, 'overloaded_error', null],
    [{ 'x-stub-status': '503' }, 503, 'overloaded_error', null],
    [{ 'x-stub-status': '500' }, 500, 'api_error', null],
    [{ 'x-stub-status': '401' }, 401, 'authentication_error', null],
    [{ 'x-stub-status': '413' }, 413, 'request_too_large', null],
  ])('%o answers %i %s in Anthropic error shape', async (headers, status, type, retryAfter) => {
    for (const request of [create(headers), stream(headers)]) {
      const error = await apiError(request);
      expect(error.status).toBe(status);
      expect(error.type).toBe(type);
      expect(error.error).toMatchObject({ type: 'error', error: { type } });
      expect(error.headers?.get('retry-after') ?? null).toBe(retryAfter);
    }
  });

  it('answers a prompt over the window with "prompt is too long", an overflow to core', async () => {
    const promptTokens = (await create({})).usage.input_tokens;
    const window = promptTokens - 1;
    for (const request of [
      create({ 'x-stub-context-window': String(window) }),
      stream({ 'x-stub-context-window': String(window) }),
    ]) {
      const error = await apiError(request);
      expect(error.status).toBe(400);
      expect(error.type).toBe('invalid_request_error');
      expect(error.error).toMatchObject({
        error: { message: `prompt is too long: ${promptTokens} tokens > ${window} maximum` },
      });
      const verdict = detectOverflowError({
        status: 400,
        message: error.message,
        body: JSON.stringify(error.error),
      });
      expect(verdict).toMatchObject({ overflow: true, matched: 'prompt is too long' });
    }
  });

  it('answers a prompt that fits without its max_tokens with Anthropic wording for that, an overflow too', async () => {
    const { usage } = await create({});
    const window = usage.input_tokens + 50;
    const error = await apiError(create({ 'x-stub-context-window': String(window) }));
    const message = `input length and \`max_tokens\` exceed context limit: ${usage.input_tokens} + 100 > ${window}, decrease input length or \`max_tokens\` and try again`;
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message } });
    expect(detectOverflowError({ status: 400, message: error.message }).overflow).toBe(true);
  });

  it('refuses a tool_use without its tool_result right after, and a tool_result without its call', async () => {
    const cases: Array<[MessageParam[], string]> = [
      [
        [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_cut', name: 'Bash', input: {} }] },
          { role: 'user', content: 'next' },
        ],
        '`tool_use` ids were found without `tool_result` blocks immediately after: toolu_cut.',
      ],
      [
        [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_gone', content: 'x' }] }],
        'unexpected `tool_use_id` found in `tool_result` blocks: toolu_gone.',
      ],
    ];
    for (const [messages, wording] of cases) {
      const error = await apiError(client.messages.create({ ...params, messages }));
      expect(error.status).toBe(400);
      expect(error.type).toBe('invalid_request_error');
      expect(error.message).toContain(wording);
      expect(detectOverflowError({ status: 400, message: error.message }).overflow).toBe(false);
    }
  });

  it('sends a bare status with no body', async () => {
    const response = await fetch(`${stub.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'x-stub-status': '413', 'x-stub-error-body': 'none' },
      body: JSON.stringify(params),
    });
    expect(response.status).toBe(413);
    expect(await response.text()).toBe('');
  });

  it.each(['before-response', 'mid-body'])('drops the connection %s', async (drop) => {
    await expect(create({ 'x-stub-drop': drop })).rejects.toThrow();
    await expect(stream({ 'x-stub-drop': drop })).rejects.toThrow();
  });

  it('sends a malformed message and a malformed stream', async () => {
    await expect(create({ 'x-stub-output': 'malformed' })).rejects.toThrow();
    await expect(stream({ 'x-stub-output': 'malformed' })).rejects.toThrow();
  });

  it('answers the tool-call output fault with a tool_use block', async () => {
    const message = await create({ 'x-stub-output': 'tool-call' });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'toolu_stub_0', name: 'read', input: { path: 'README.md' } },
    ]);
  });

  it('refuses an invalid stub header in its own shape', async () => {
    const error = await apiError(create({ 'x-stub-agent-steps': 'many' }));
    expect(error.status).toBe(400);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain('Invalid stub setting');
  });

  it('applies configured faults, with their times budget, to both protocols', async () => {
    stub.setFaults({ status: 529, times: 2 });
    const openai = await fetch(`${stub.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(openai.status).toBe(529);
    expect((await apiError(create({}))).type).toBe('overloaded_error');
    expect((await create({})).type).toBe('message');
  });

  it('holds Anthropic requests at a barrier until enough are in flight together', async () => {
    stub.setFaults({ barrier: 2 });
    const before = stub.stats.maxInFlight;
    const [a, b] = await Promise.all([create({}), stream({})]);
    expect([a.stop_reason, b.stop_reason]).toEqual(['end_turn', 'end_turn']);
    expect(stub.stats.maxInFlight).toBeGreaterThanOrEqual(Math.max(2, before));
  });
});
