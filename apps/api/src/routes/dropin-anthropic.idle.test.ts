/**
 * An Anthropic provider that sends its headers and part of its answer, then nothing: past
 * `upstreamIdleMs` the upstream call is aborted, a whole answer is a 504 `timeout_error`, a stream
 * ends with `event: error` (`api_error`) as Anthropic says a failure mid-stream, and nothing of the
 * half answer is stored.
 */
import { expect, it } from 'vitest';
import { APIError } from '@anthropic-ai/sdk';
import { useAnthropicDropInApi } from '../test-support/anthropic-dropin-api';
import { TENANT_A_KEY } from '../test-support/api';

const api = useAnthropicDropInApi({ dropIn: { upstreamIdleMs: 500, upstreamMaxRetries: 0 } });

const STALL = { 'x-stub-drop': 'stall-mid-body' };
const body = (text: string) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 256,
  system: 'You are terse.',
  messages: [{ role: 'user' as const, content: text }],
});

/** Resolves when the stub sees its caller hang up. */
const upstreamClosed = () => new Promise((resolve) => api.upstream.events.once('client-closed', resolve));

async function post(session: string, payload: Record<string, unknown>): Promise<Response> {
  return fetch(`${api.baseURL}/v1/messages`, {
    method: 'POST',
    headers: {
      'x-api-key': TENANT_A_KEY,
      'content-type': 'application/json',
      'x-compactor-session': session,
      ...STALL,
    },
    body: JSON.stringify(payload),
  });
}

it('a whole answer that stalls: 504 timeout_error, the call aborted, nothing stored', async () => {
  const closed = upstreamClosed();
  const response = await post('idle-whole', body('stall please'));
  expect(response.status).toBe(504);
  expect(response.headers.get('x-compactor-session')).toBe('idle-whole');
  expect(await response.json()).toEqual({
    type: 'error',
    error: { type: 'timeout_error', message: expect.stringContaining('500 ms') },
  });
  await closed;
  expect((await api.history('idle-whole')).map((m) => m.role)).toEqual(['system', 'user']);
});

it('a stream that stalls: what came is relayed, then event: error, no message_stop, nothing stored', async () => {
  const closed = upstreamClosed();
  const response = await post('idle-stream', { ...body('stall the stream'), stream: true });
  expect(response.status).toBe(200);
  const events = (await response.text()).split('\n\n').filter(Boolean);
  await closed;
  expect(events[0]).toMatch(/^event: message_start\n/);
  const last = events.at(-1)!.split('\n');
  expect(last[0]).toBe('event: error');
  expect(JSON.parse(last[1]!.slice('data: '.length))).toEqual({
    type: 'error',
    error: { type: 'api_error', message: expect.stringContaining('stopped sending') },
  });
  expect(events.some((event) => event.startsWith('event: message_stop'))).toBe(false);
  expect((await api.history('idle-stream')).map((m) => m.role)).toEqual(['system', 'user']);
});

it('the Anthropic SDK reads the stalled stream as an APIError, and a retry is sent upstream afresh', async () => {
  const stalled = api.client({ 'x-compactor-session': 'idle-sdk', ...STALL });
  await expect(stalled.messages.stream(body('stall for the SDK')).finalMessage()).rejects.toBeInstanceOf(
    APIError,
  );

  const before = api.upstream.requests.length;
  const answer = await api
    .client({ 'x-compactor-session': 'idle-sdk' })
    .messages.create(body('stall for the SDK'));
  expect(api.upstream.requests.length).toBe(before + 1);
  const stored = await api.history('idle-sdk');
  expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
  const text = answer.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  expect(stored.at(-1)!.parts).toMatchObject([{ type: 'text', text }]);
});
