/**
 * A tool result under `X-Compactor-Session`: the owner of its call is read in the header
 * lookup's round trip, and the result still lands on the stored call; a result the lookup did
 * not read ahead (not after the last assistant message) is still found by its own read.
 */
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { useTestSessions } from '@compactor/sessions/testing';
import { syncConversation } from './conversation';
import {
  chatRequest,
  conversationDeps,
  storedMessages,
  toolCall,
  toolResult,
  turn,
  user,
} from './test-support/conversations';

const t = useTestSessions();
const deps = conversationDeps(t, { now: new Date('2026-03-01T12:00:00Z') });

/** The texts of the statements sent one per round trip (a pipeline has none of its own). */
let texts: string[] = [];
beforeEach(() => {
  texts = [];
  const query = pg.Client.prototype.query;
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const first = args[0];
    const text = typeof first === 'string' ? first : (first as { text?: string } | null)?.text;
    if (text) texts.push(text);
    return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

const ownerReads = () => texts.filter((text) => text.includes('as wanted(call_id)')).length;

describe('tool results under a session header', () => {
  it("read their calls' owners with the session lookup, and are stored on the calls", async () => {
    const first = [user('list the files')];
    await turn(deps, chatRequest('t-owners', first, { header: 'owners-1' }), toolCall('call_1', 'ls'));
    texts = [];
    const second = [...first, toolCall('call_1', 'ls'), toolResult('call_1', 'a.ts b.ts')];
    const synced = await syncConversation(deps, chatRequest('t-owners', second, { header: 'owners-1' }));
    expect(synced.outcome).toBe('extended');
    expect(ownerReads()).toBe(0);
    const stored = await storedMessages(t, 't-owners', 'owners-1');
    expect(stored[1]).toMatchObject({
      role: 'assistant',
      parts: [{ type: 'tool', callId: 'call_1', status: 'completed', output: 'a.ts b.ts' }],
    });
  });

  it('a result before the last assistant message is found by its own read', async () => {
    const first = [user('list the files')];
    await turn(deps, chatRequest('t-owners', first, { header: 'owners-2' }), toolCall('call_1', 'ls'));
    // The client sends the result and, after it, an assistant message of its own: the result is
    // not among those read ahead.
    const second = [
      ...first,
      toolCall('call_1', 'ls'),
      toolResult('call_1', 'a.ts'),
      { role: 'assistant', content: 'two files' },
      user('and now?'),
    ];
    texts = [];
    await syncConversation(deps, chatRequest('t-owners', second, { header: 'owners-2' }));
    expect(ownerReads()).toBe(1);
    const stored = await storedMessages(t, 't-owners', 'owners-2');
    expect(stored[1]).toMatchObject({
      parts: [{ type: 'tool', callId: 'call_1', status: 'completed', output: 'a.ts' }],
    });
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant', 'user']);
  });
});
