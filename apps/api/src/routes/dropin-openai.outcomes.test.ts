/**
 * What `POST /v1/chat/completions` answers besides a plain turn: a history that diverges, an
 * identical retry, an upstream failing for a while or for good, a timeout, a client that leaves,
 * and bodies or keys it refuses, each in the shape an OpenAI SDK reads.
 */
import { describe, expect, it } from 'vitest';
import { APIError } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { READ_TOOL } from '../test-support/agent-loop';
import { TENANT_A_KEY } from '../test-support/api';
import { useDropInApi } from '../test-support/dropin-api';
import { buildServerOn } from '../test-support/server-on';
import { answersStored } from '@compactor/gateway';

// One retry of its own and a short timeout, so the failures come quickly.
const api = useDropInApi({ dropIn: { upstreamMaxRetries: 1, upstreamTimeoutMs: 1_000 } });

const ask = (text: string): ChatCompletionMessageParam[] => [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: text },
];

/** A raw POST, for what an SDK would not send and for the answer's headers. */
async function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${api.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TENANT_A_KEY}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function rowCounts(): Promise<Record<string, number>> {
  await answersStored();
  const { rows } = await api.database.database.pool.query(
    `select (select count(*) from sessions)::int as sessions, (select count(*) from messages)::int as messages,
            (select count(*) from conversation_links)::int as links`,
  );
  return rows[0];
}

describe('refusals, in OpenAI error shape, with nothing written or sent upstream', () => {
  it.each([
    ['not JSON', '{"model": "gpt-4o", "messages": ['],
    ['an array', '[]'],
    ['no model', { messages: ask('hi') }],
    ['messages not a list', { model: 'gpt-4o', messages: 'hi' }],
    ['an unknown role', { model: 'gpt-4o', messages: [{ role: 'wizard', content: 'hi' }] }],
    ['a NUL in the text', { model: 'gpt-4o', messages: ask('a\u0000b') }],
    [
      'a tool result for no call',
      { model: 'gpt-4o', messages: [...ask('hi'), { role: 'tool', tool_call_id: 'c1', content: 'x' }] },
    ],
    ['stream not a boolean', { model: 'gpt-4o', messages: ask('hi'), stream: 'yes' }],
  ])('%s: 400 invalid_request_error', async (_, body) => {
    const before = await rowCounts();
    const upstream = api.upstream.requests.length;
    const response = await post(body);
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: { message: string; type: string; code: string } };
    expect(answer.error).toMatchObject({ type: 'invalid_request_error', message: expect.any(String) });
    expect(await rowCounts()).toEqual(before);
    expect(api.upstream.requests.length).toBe(upstream);
  });

  it('a Compactor header it cannot use: 400 naming it', async () => {
    const response = await post(
      { model: 'gpt-4o', messages: ask('hi') },
      { 'x-compactor-context-window': 'lots' },
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /x-compactor-context-window/,
    );
  });

  it('no key or an unknown one: 401 as OpenAI says it (the SDK raises its AuthenticationError)', async () => {
    const before = await rowCounts();
    await expect(
      api.client({}, 'not-a-key').chat.completions.create({ model: 'gpt-4o', messages: ask('hi') }),
    ).rejects.toMatchObject({ status: 401, type: 'authentication_error', code: 'invalid_api_key' });
    const response = await post({ model: 'gpt-4o', messages: ask('hi') }, { authorization: '' });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { type: 'authentication_error' } });
    expect(await rowCounts()).toEqual(before);
  });

  it('takes the key from x-api-key as well', async () => {
    const response = await post(
      { model: 'gpt-4o', messages: ask('key by x-api-key') },
      { authorization: '', 'x-api-key': TENANT_A_KEY },
    );
    expect(response.status).toBe(200);
  });
});

describe('refusals of an API configured otherwise', () => {
  it('no upstream configured: 503, nothing written', async () => {
    const unconfigured = await buildServerOn(api.database.db, 'dropin-unconfigured');
    try {
      const before = await rowCounts();
      const response = await unconfigured.request('POST', '/v1/chat/completions', {
        model: 'gpt-4o',
        messages: ask('hi'),
      });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({
        error: { type: 'server_error', code: 'upstream_not_configured' },
      });
      expect(await rowCounts()).toEqual(before);
    } finally {
      await unconfigured.close();
    }
  });

  it("a tenant past its session-creation rate: 429 with Retry-After, as the SDK's retry rules expect", async () => {
    const capped = await buildServerOn(api.database.db, 'dropin-capped', {
      dropIn: { openai: { baseURL: api.recorder.url, apiKey: 'stub' } },
      tenantLimits: { sessionCreatesPerMinute: 1 },
    });
    try {
      const first = await capped.request('POST', '/v1/chat/completions', {
        model: 'gpt-4o',
        messages: ask('first of the minute'),
      });
      expect(first.statusCode).toBe(200);
      const second = await capped.request('POST', '/v1/chat/completions', {
        model: 'gpt-4o',
        messages: ask('one too many'),
      });
      expect(second.statusCode).toBe(429);
      expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
      expect(second.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'too_many_requests' } });
    } finally {
      await capped.close();
    }
  });
});

describe('the conversation', () => {
  it('an identical retry is answered from the store: same answer, no upstream call, X-Compactor-Replayed', async () => {
    const client = api.client({ 'x-compactor-session': 'retried' });
    const body = { model: 'gpt-4o', messages: ask('Say hello.') };
    const first = await client.chat.completions.create(body).withResponse();
    const upstream = api.upstream.requests.length;
    const again = await client.chat.completions.create(body).withResponse();
    expect(again.response.headers.get('x-compactor-replayed')).toBe('true');
    expect(again.response.headers.get('x-compactor-session')).toBe('retried');
    expect(again.data).toEqual(first.data);

    // Streamed, the stored answer comes back as chunks that add up to it.
    const stream = client.chat.completions.stream({ ...body, stream: true });
    const replayed = await stream.finalChatCompletion();
    expect(replayed.choices[0]!.message.content).toBe(first.data.choices[0]!.message.content);
    expect(api.upstream.requests.length).toBe(upstream);
    expect(await api.history('retried')).toHaveLength(3);
  });

  it('a history that diverges starts a new session and says which it left; the old one is untouched', async () => {
    const client = api.client({ 'x-compactor-session': 'diverging' });
    const first = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: ask('Plan the release.'),
    });
    const history = [
      ...ask('Plan the release.'),
      first.choices[0]!.message,
      { role: 'user' as const, content: 'Go on.' },
    ];
    await client.chat.completions.create({ model: 'gpt-4o', messages: history });
    const stored = await api.history('diverging');

    // The client edits its first message and sends the rest again.
    const edited = [...ask('Plan the hotfix.'), ...history.slice(2)];
    const { response } = await client.chat.completions
      .create({ model: 'gpt-4o', messages: edited })
      .withResponse();
    const forked = response.headers.get('x-compactor-session');
    expect(response.headers.get('x-compactor-diverged-from')).toBe('diverging');
    expect(forked).not.toBe('diverging');
    expect(await api.history('diverging')).toEqual(stored);
    const texts = (await api.history(forked!)).map((m) =>
      m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''),
    );
    expect(texts.slice(0, 2)).toEqual(['You are terse.', 'Plan the hotfix.']);
  });

  it('answers with X-Compactor-Session and X-Compactor-Fit', async () => {
    const response = await post(
      { model: 'gpt-4o', messages: ask('headers please') },
      { 'x-compactor-session': 'with-headers' },
    );
    expect(response.headers.get('x-compactor-session')).toBe('with-headers');
    expect(response.headers.get('x-compactor-fit')).toBe('view');
  });
});

describe('the upstream', () => {
  it('a 5xx the SDK retries away: the client gets the answer', async () => {
    api.upstream.setFaults({ status: 503, retryAfterSeconds: 0.05, times: 1 });
    const before = api.upstream.requests.length;
    const answer = await api
      .client()
      .chat.completions.create({ model: 'gpt-4o', messages: ask('flaky upstream') });
    api.upstream.setFaults({});
    expect(answer.choices[0]!.message.content).toMatch(/flaky upstream/);
    expect(api.upstream.requests.slice(before).map((r) => r.status)).toEqual([503, 200]);
  });

  it("a 5xx that lasts: the provider's status and error body as they came, the question kept, no answer stored", async () => {
    const before = api.upstream.requests.length;
    const response = await post(
      { model: 'gpt-4o', messages: ask('broken upstream') },
      { 'x-compactor-session': 'broken', 'x-stub-status': '500', 'x-stub-retry-after': '0.05' },
    );
    expect(response.status).toBe(500);
    expect(response.headers.get('x-compactor-session')).toBe('broken');
    const body = await response.text();
    expect(body).toBe(api.recorder.answers.at(-1)!.body);
    expect(api.upstream.requests.length - before).toBe(2);
    expect((await api.history('broken')).map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('a 200 whose body is no completion: 502 in OpenAI shape, the question kept, no answer stored', async () => {
    const response = await post(
      { model: 'gpt-4o', messages: ask('garbled upstream') },
      { 'x-compactor-session': 'garbled', 'x-stub-output': 'malformed' },
    );
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ error: { code: 'upstream_invalid_response' } });
    expect((await api.history('garbled')).map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('an upstream that does not answer in time: 504 in OpenAI shape after the retry', async () => {
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
    const response = await post(
      { model: 'gpt-4o', messages: ask('slow upstream') },
      { 'x-stub-latency-ms': '5000' },
    );
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ error: { type: 'timeout', code: 'upstream_timeout' } });
    const attempts = api.upstream.requests.slice(before);
    expect(attempts).toHaveLength(2);
    // Each attempt was given up at its timeout, not left running at the provider.
    await bothClosed;
    expect(attempts.every((r) => r.clientClosed)).toBe(true);
  });

  it('a client that leaves aborts the upstream call, and no answer is stored', async () => {
    const closed = new Promise((resolve) => api.upstream.events.once('client-closed', resolve));
    const received = new Promise((resolve) => api.upstream.events.once('request', resolve));
    const leaving = new AbortController();
    const request = api
      .client({ 'x-compactor-session': 'leaving', 'x-stub-latency-ms': '30000' })
      .chat.completions.create(
        { model: 'gpt-4o', messages: ask('never mind'), stream: true },
        { signal: leaving.signal },
      );
    await received;
    leaving.abort();
    await expect(request).rejects.toBeInstanceOf(APIError);
    await closed;
    expect((await api.history('leaving')).map((m) => m.role)).toEqual(['system', 'user']);
  });
});

it("passes the client's tools and other fields through, and offers recall besides", async () => {
  await api.client().chat.completions.create({
    model: 'gpt-4o',
    messages: ask('tools please'),
    tools: [READ_TOOL],
    temperature: 0.2,
  });
  expect(api.upstream.requests.at(-1)!.toolNames).toEqual(['read', 'recall']);
});
