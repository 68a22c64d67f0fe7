/**
 * What `POST /v1/messages` answers besides a plain turn: a history that diverges, an identical
 * retry, an upstream failing for a while or for good, a timeout, a client that leaves, and bodies
 * or keys it refuses, each in the shape an Anthropic SDK reads.
 */
import { describe, expect, it } from 'vitest';
import { APIError } from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { ANTHROPIC_READ_TOOL } from '../test-support/anthropic-agent-loop';
import { useAnthropicDropInApi } from '../test-support/anthropic-dropin-api';
import { TENANT_A_KEY } from '../test-support/api';
import { buildServerOn } from '../test-support/server-on';

// One retry of its own and a short timeout, so the failures come quickly.
const api = useAnthropicDropInApi({ dropIn: { upstreamMaxRetries: 1, upstreamTimeoutMs: 1_000 } });

const SYSTEM = 'You are terse.';
const MODEL = 'claude-sonnet-4-5';
const ask = (text: string): MessageParam[] => [{ role: 'user', content: text }];
const body = (text: string) => ({ model: MODEL, max_tokens: 256, system: SYSTEM, messages: ask(text) });

/** A raw POST, for what an SDK would not send and for the answer's headers. */
async function post(payload: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${api.baseURL}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': TENANT_A_KEY, 'content-type': 'application/json', ...headers },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
}

type ErrorBody = { type: string; error: { type: string; message: string } };

describe("refusals, in Anthropic's error shape, with nothing written or sent upstream", () => {
  const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'a.ts' } };
  it.each([
    ['not JSON', '{"model": "claude", "messages": ['],
    ['an array', '[]'],
    ['no model', { max_tokens: 10, messages: ask('hi') }],
    ['no max_tokens', { model: MODEL, messages: ask('hi') }],
    ['max_tokens not a positive integer', { model: MODEL, max_tokens: 0.5, messages: ask('hi') }],
    ['messages not a list', { model: MODEL, max_tokens: 10, messages: 'hi' }],
    ['an unknown role', { model: MODEL, max_tokens: 10, messages: [{ role: 'wizard', content: 'hi' }] }],
    ['a NUL in the text', { model: MODEL, max_tokens: 10, messages: ask('a\u0000b') }],
    ['system not text', { ...body('hi'), system: [{ type: 'image', source: {} }] }],
    [
      'a tool_result for no call',
      {
        ...body('hi'),
        messages: [
          ...ask('hi'),
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'x' }] },
        ],
      },
    ],
    ['tool_use in a user turn', { ...body('hi'), messages: [{ role: 'user', content: [toolUse] }] }],
    ['stream not a boolean', { ...body('hi'), stream: 'yes' }],
    ['tools not a list', { ...body('hi'), tools: { name: 'read' } }],
  ])('%s: 400 invalid_request_error', async (_, payload) => {
    const before = await api.rowCounts();
    const upstream = api.upstream.requests.length;
    const response = await post(payload);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.any(String) },
    });
    expect(await api.rowCounts()).toEqual(before);
    expect(api.upstream.requests.length).toBe(upstream);
  });

  it('a Compactor header it cannot use: 400 naming it', async () => {
    const response = await post(body('hi'), { 'x-compactor-context-window': 'lots' });
    expect(response.status).toBe(400);
    const answer = (await response.json()) as ErrorBody;
    expect(answer.error).toMatchObject({ type: 'invalid_request_error' });
    expect(answer.error.message).toMatch(/x-compactor-context-window/);
  });

  it('no key or an unknown one: 401 as Anthropic says it (the SDK raises its AuthenticationError)', async () => {
    const before = await api.rowCounts();
    await expect(api.client({}, 'not-a-key').messages.create(body('hi'))).rejects.toMatchObject({
      status: 401,
      type: 'authentication_error',
    });
    const response = await post(body('hi'), { 'x-api-key': '' });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(await api.rowCounts()).toEqual(before);
  });
});

describe('the conversation', () => {
  it('an identical retry is answered from the store: same message, no upstream call, X-Compactor-Replayed', async () => {
    const client = api.client({ 'x-compactor-session': 'retried' });
    const request = { ...body('Say hello.'), thinking: { type: 'adaptive' as const } };
    const first = await client.messages.create(request).withResponse();
    const upstream = api.upstream.requests.length;
    const again = await client.messages.create(request).withResponse();
    expect(again.response.headers.get('x-compactor-replayed')).toBe('true');
    expect(again.response.headers.get('x-compactor-session')).toBe('retried');
    expect(again.data).toEqual(first.data);

    // Streamed, the stored message comes back as events the SDK assembles into the same message.
    const replayed = await client.messages.stream(request).finalMessage();
    // (The stream's message has fields of its own, `parsed_output`, `stop_details`.)
    expect(replayed).toMatchObject(first.data);
    expect(api.upstream.requests.length).toBe(upstream);
    expect((await api.history('retried')).map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
  });

  it('a streamed retry of an answer that called a tool is replayed as events the SDK assembles into it', async () => {
    const client = api.client({ 'x-compactor-session': 'retried-tool' });
    const request = { ...body('Read a.ts.'), tools: [ANTHROPIC_READ_TOOL] };
    const first = await client.messages.stream(request).finalMessage();
    expect(first.content.map((block) => block.type)).toEqual(['text', 'tool_use']);
    const upstream = api.upstream.requests.length;
    const stream = client.messages.stream(request);
    const { response } = await stream.withResponse();
    expect(response.headers.get('x-compactor-replayed')).toBe('true');
    expect(await stream.finalMessage()).toMatchObject({ content: first.content, stop_reason: 'tool_use' });
    expect(api.upstream.requests.length).toBe(upstream);
  });

  it('a history that diverges starts a new session and says which it left; the old one is untouched', async () => {
    const client = api.client({ 'x-compactor-session': 'diverging' });
    const first = await client.messages.create(body('Plan the release.'));
    const history: MessageParam[] = [
      ...ask('Plan the release.'),
      { role: 'assistant', content: first.content },
      { role: 'user', content: 'Go on.' },
    ];
    await client.messages.create({ ...body(''), messages: history });
    const stored = await api.history('diverging');

    // The client edits its first message and sends the rest again.
    const edited = [...ask('Plan the hotfix.'), ...history.slice(1)];
    const { response } = await client.messages.create({ ...body(''), messages: edited }).withResponse();
    const forked = response.headers.get('x-compactor-session');
    expect(response.headers.get('x-compactor-diverged-from')).toBe('diverging');
    expect(forked).not.toBe('diverging');
    expect(await api.history('diverging')).toEqual(stored);
    const texts = (await api.history(forked!)).map((m) =>
      m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''),
    );
    expect(texts.slice(0, 2)).toEqual([SYSTEM, 'Plan the hotfix.']);
  });

  it('answers with X-Compactor-Session and X-Compactor-Fit', async () => {
    const response = await post(body('headers please'), { 'x-compactor-session': 'with-headers' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-compactor-session')).toBe('with-headers');
    expect(response.headers.get('x-compactor-fit')).toBe('view');
  });
});

describe('the upstream', () => {
  it('a 529 the SDK retries away: the client gets the answer', async () => {
    api.upstream.setFaults({ status: 529, retryAfterSeconds: 0.05, times: 1 });
    const before = api.upstream.requests.length;
    const answer = await api.client().messages.create(body('flaky upstream'));
    api.upstream.setFaults({});
    expect(answer.content).toContainEqual(
      expect.objectContaining({ text: expect.stringMatching(/flaky upstream/) }),
    );
    expect(api.upstream.requests.slice(before).map((r) => r.status)).toEqual([529, 200]);
  });

  it.each([500, 529])(
    "a %i that lasts: the provider's status and error body as they came, the question kept, no answer stored",
    async (status) => {
      const session = `broken-${status}`;
      const before = api.upstream.requests.length;
      const response = await post(body('broken upstream'), {
        'x-compactor-session': session,
        'x-stub-status': String(status),
        'x-stub-retry-after': '0.05',
      });
      expect(response.status).toBe(status);
      expect(response.headers.get('x-compactor-session')).toBe(session);
      const text = await response.text();
      expect(text).toBe(api.recorder.answers.at(-1)!.body);
      expect(JSON.parse(text)).toMatchObject({
        type: 'error',
        error: { type: status === 529 ? 'overloaded_error' : 'api_error' },
      });
      expect(api.upstream.requests.length - before).toBe(2);
      expect((await api.history(session)).map((m) => m.role)).toEqual(['system', 'user']);
    },
  );

  it("an upstream that does not answer in time: 504 timeout_error in Anthropic's shape after the retry", async () => {
    const before = api.upstream.requests.length;
    const bothClosed = new Promise<void>((resolve) => {
      let closed = 0;
      const onClosed = () => {
        if (++closed < 2) return;
        api.upstream.events.off('client-closed', onClosed);
        resolve();
      };
      api.upstream.events.on('client-closed', onClosed);
    });
    const response = await post(body('slow upstream'), { 'x-stub-latency-ms': '5000' });
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });
    const attempts = api.upstream.requests.slice(before);
    expect(attempts).toHaveLength(2);
    // Each attempt was given up at its timeout, not left running at the provider.
    await bothClosed;
    expect(attempts.every((r) => r.clientClosed)).toBe(true);
  });

  it('a body that is no Message: 502 api_error, no answer stored', async () => {
    const response = await post(body('garbled upstream'), {
      'x-compactor-session': 'garbled',
      'x-stub-output': 'malformed',
    });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect((await api.history('garbled')).map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('no Anthropic upstream configured: 503 saying so, nothing written', async () => {
    const unconfigured = await buildServerOn(api.database.db, 'dropin-anthropic-none');
    try {
      const before = await api.rowCounts();
      const response = await unconfigured.app.inject({
        method: 'POST',
        url: '/v1/messages',
        headers: { 'x-api-key': TENANT_A_KEY },
        payload: body('anyone there?'),
      });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({
        type: 'error',
        error: { message: expect.stringMatching(/UPSTREAM_ANTHROPIC_BASE_URL/) },
      });
      expect(await api.rowCounts()).toEqual(before);
    } finally {
      await unconfigured.close();
    }
  });

  it('a client that leaves aborts the upstream call, and no answer is stored', async () => {
    const closed = new Promise((resolve) => api.upstream.events.once('client-closed', resolve));
    const received = new Promise((resolve) => api.upstream.events.once('request', resolve));
    const leaving = new AbortController();
    const request = api
      .client({ 'x-compactor-session': 'leaving', 'x-stub-latency-ms': '30000' })
      .messages.create({ ...body('never mind'), stream: true }, { signal: leaving.signal });
    await received;
    leaving.abort();
    await expect(request).rejects.toBeInstanceOf(APIError);
    await closed;
    expect((await api.history('leaving')).map((m) => m.role)).toEqual(['system', 'user']);
  });
});

it("passes the client's tools, fields and anthropic-* headers through, and offers recall besides", async () => {
  await api
    .client({ 'anthropic-beta': 'interleaved-thinking-2025-05-14', 'anthropic-version': '2023-06-01' })
    .messages.create({ ...body('tools please'), tools: [ANTHROPIC_READ_TOOL], stop_sequences: ['END'] });
  const request = api.upstream.requests.at(-1)!;
  expect(request.toolNames).toEqual(['read', 'recall']);
  expect(request.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
  expect(request.headers['anthropic-version']).toBe('2023-06-01');
  // Compactor's key stays with Compactor.
  expect(JSON.stringify(request.headers)).not.toContain(TENANT_A_KEY);
  const sent = JSON.parse(api.recorder.requestBodies.at(-1)!) as Record<string, unknown>;
  expect(sent).toMatchObject({ model: MODEL, max_tokens: 256, stop_sequences: ['END'], system: SYSTEM });
});
