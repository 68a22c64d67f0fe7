/**
 * Appends carry an id on every message, assigned by the client when the caller gives none, so a
 * write sent twice (a retry after a gateway error, a 503 whose transaction committed anyway) is
 * stored once; the same ids go out again on the retry.
 */
import { describe, expect, it } from 'vitest';
import { CompactorClient } from './client.js';
import { withMessageIds } from './message-ids.js';
import { useScriptedServer } from './test-support/scripted-server.js';

const server = useScriptedServer();
const bodies = server.bodies as Array<{ messages: Array<{ id?: string }> }>;

const appended = (ids: string[]) => ({
  messages: ids.map((id, i) => ({ id, seq: i + 1, created: true })),
  status: {},
  compaction: null,
  prune: null,
});
const client = () =>
  new CompactorClient({ baseUrl: server.baseUrl, apiKey: 'k', retry: { random: () => 0, baseDelayMs: 1 } });
const user = (text: string) => ({ role: 'user' as const, parts: [{ type: 'text' as const, text }] });

describe('appending messages', () => {
  it('gives every message without an id one of its own, and keeps the ids the caller set', async () => {
    server.script = [{ status: 201, body: appended(['x', 'y']) }];
    await client().appendMessages('s', [user('first'), { ...user('second'), id: 'mine-2' }]);
    const [sent] = bodies;
    expect(sent!.messages[0]!.id).toMatch(/^msg_[0-9a-f-]{36}$/);
    expect(sent!.messages[1]!.id).toBe('mine-2');
  });

  it('sends the same ids again when a gateway answered 502 or 503 in its place', async () => {
    server.script = [
      { status: 502, body: { error: { code: 'bad_gateway', message: 'upstream reset' } } },
      { status: 503, body: { error: { code: 'bad_gateway', message: 'upstream reset' } } },
      { status: 201, body: appended(['a', 'b']) },
    ];
    await client().appendMessages('s', { messages: [user('one'), user('two')] });
    expect(bodies).toHaveLength(3);
    const ids = bodies.map((body) => body.messages.map((message) => message.id));
    expect(ids[1]).toEqual(ids[0]);
    expect(ids[2]).toEqual(ids[0]);
    expect(new Set(ids[0]).size).toBe(2);
  });

  it('gives two calls different ids', () => {
    const first = withMessageIds({ messages: [user('same')] });
    const second = withMessageIds({ messages: [user('same')] });
    expect(first.messages[0]!.id).not.toBe(second.messages[0]!.id);
  });
});
