/**
 * `drop: stall-mid-body`: the answer starts (status, headers, part of the body) and then nothing
 * more comes while the client stays; the response ends only when the client goes away. It is the
 * provider a client's idle bound exists for.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LlmStub } from './server';
import { startLlmStub } from './server';

let stub: LlmStub;

beforeAll(async () => {
  stub = await startLlmStub({ streamPieceChars: 8 });
});
afterAll(() => stub.close());

const chatBody = { model: 'stub-model', messages: [{ role: 'user', content: 'Say something long enough.' }] };
const messagesBody = { ...chatBody, model: 'stub-claude', max_tokens: 256 };

const cases = [
  { name: 'a whole chat completion', path: '/v1/chat/completions', body: chatBody, end: null },
  { name: 'a chat stream', path: '/v1/chat/completions', body: { ...chatBody, stream: true }, end: '[DONE]' },
  { name: 'a whole message', path: '/v1/messages', body: messagesBody, end: null },
  {
    name: 'a messages stream',
    path: '/v1/messages',
    body: { ...messagesBody, stream: true },
    end: 'message_stop',
  },
];

it.each(cases)('$name starts, then stays open without another byte until the client leaves', async (c) => {
  const client = new AbortController();
  const response = await fetch(`${stub.origin}${c.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-stub-drop': 'stall-mid-body' },
    body: JSON.stringify(c.body),
    signal: client.signal,
  });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const first = await reader.read();
  expect(first.done).toBe(false);
  let received = decoder.decode(first.value, { stream: true });
  expect(received.length).toBeGreaterThan(0);

  // Nothing the stub sends ends the response: a whole answer to a later request arrives while
  // this one still waits, and only the client's leaving ends it.
  let settled = false;
  const rest = (async () => {
    for (;;) {
      const next = await reader.read();
      if (next.done) return 'ended';
      received += decoder.decode(next.value, { stream: true });
    }
  })().finally(() => (settled = true));
  const later = await fetch(`${stub.origin}${c.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(c.body),
  });
  expect(await later.text()).toContain(c.end ?? '"usage"');
  expect(settled).toBe(false);
  client.abort();
  await expect(rest).rejects.toMatchObject({ name: 'AbortError' });

  if (c.end === null) expect(() => JSON.parse(received) as unknown).toThrow();
  else expect(received).not.toContain(c.end);
});
