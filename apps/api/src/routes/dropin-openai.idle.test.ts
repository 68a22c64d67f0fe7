/**
 * An OpenAI-compatible provider that sends its headers and part of its answer, then nothing:
 * past `upstreamIdleMs` the upstream call is aborted, a whole answer is a 504 in OpenAI's shape,
 * a stream ends with an `error` data event as OpenAI sends mid-stream errors, and nothing of the
 * half answer is stored.
 */
import { expect, it } from 'vitest';
import { APIError } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { TENANT_A_KEY } from '../test-support/api';
import { useDropInApi } from '../test-support/dropin-api';

const api = useDropInApi({ dropIn: { upstreamIdleMs: 500, upstreamMaxRetries: 0 } });

const STALL = { 'x-stub-drop': 'stall-mid-body' };

const ask = (text: string): ChatCompletionMessageParam[] => [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: text },
];

/** Resolves when the stub sees its caller hang up. */
const upstreamClosed = () => new Promise((resolve) => api.upstream.events.once('client-closed', resolve));

async function post(session: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${api.baseURL}/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TENANT_A_KEY}`,
      'content-type': 'application/json',
      'x-compactor-session': session,
      ...STALL,
    },
    body: JSON.stringify({ model: 'gpt-4o', ...body }),
  });
}

it('a whole answer that stalls: 504 upstream_idle, the call aborted, nothing stored', async () => {
  const closed = upstreamClosed();
  const response = await post('idle-whole', { messages: ask('stall please') });
  expect(response.status).toBe(504);
  expect(response.headers.get('x-compactor-session')).toBe('idle-whole');
  expect(await response.json()).toMatchObject({
    error: { type: 'timeout', code: 'upstream_idle', message: expect.stringContaining('500 ms') },
  });
  await closed;
  expect((await api.history('idle-whole')).map((m) => m.role)).toEqual(['system', 'user']);
});

it('a stream that stalls: what came is relayed, then an error event, no [DONE], nothing stored', async () => {
  const closed = upstreamClosed();
  const response = await post('idle-stream', { messages: ask('stall the stream'), stream: true });
  expect(response.status).toBe(200);
  const events = (await response.text()).split('\n\n').filter(Boolean);
  await closed;
  expect(events.length).toBeGreaterThan(1);
  const relayed = events.slice(0, -1).map((event) => JSON.parse(event.slice('data: '.length)) as object);
  expect(relayed.every((chunk) => 'choices' in chunk)).toBe(true);
  expect(JSON.parse(events.at(-1)!.slice('data: '.length))).toMatchObject({
    error: { type: 'timeout', code: 'upstream_idle' },
  });
  expect(events).not.toContain('data: [DONE]');
  expect((await api.history('idle-stream')).map((m) => m.role)).toEqual(['system', 'user']);
});

it('the OpenAI SDK reads the stalled stream as an APIError, and a retry is sent upstream afresh', async () => {
  const client = api.client({ 'x-compactor-session': 'idle-sdk', ...STALL });
  const consume = async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: ask('stall for the SDK'),
      stream: true,
    });
    for await (const _chunk of stream);
  };
  await expect(consume()).rejects.toBeInstanceOf(APIError);

  const before = api.upstream.requests.length;
  const answer = await api
    .client({ 'x-compactor-session': 'idle-sdk' })
    .chat.completions.create({ model: 'gpt-4o', messages: ask('stall for the SDK') });
  expect(api.upstream.requests.length).toBe(before + 1);
  const stored = await api.history('idle-sdk');
  expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
  expect(stored.at(-1)!.parts).toMatchObject([{ type: 'text', text: answer.choices[0]!.message.content }]);
});
