/**
 * The conversation store against real Postgres and Redis: a new conversation creates its session,
 * the next request extends it (its tool results written onto the stored answer's calls), an
 * identical retry gets the stored answer back for ten minutes, and a client's own rendering of
 * the stored answer still extends the chain.
 */
import { describe, expect, it } from 'vitest';
import { DropInInputError } from '@compactor/core';
import { findSession, lastConversationLink } from '@compactor/db';
import { InvalidInput } from '@compactor/sessions';
import { newSession, useTestSessions } from '@compactor/sessions/testing';
import { syncConversation } from './conversation';
import { REPLAY_WINDOW_MS } from './conversation-resolve';
import {
  chatRequest,
  completion,
  conversationDeps,
  reply,
  storedMessages,
  system,
  toolCall,
  toolResult,
  turn,
  user,
} from './test-support/conversations';

const t = useTestSessions();
const clock = { now: new Date('2026-03-01T12:00:00Z') };
const deps = conversationDeps(t, clock);

describe('syncConversation', () => {
  it('creates a session for a new conversation, with the model and window it asks for', async () => {
    const first = [system('You are terse.'), user('list the files')];
    const synced = await turn(deps, chatRequest('t-create', first), toolCall('call_1', 'ls'));
    expect(synced).toMatchObject({ outcome: 'created', divergedFrom: null, replay: null, answerPosition: 2 });
    expect(synced.recall).toBe(true);
    const session = await findSession(t.database.db, 't-create', synced.session.id);
    expect(session).toMatchObject({ modelId: 'gpt-4o', provider: 'openai', contextWindow: 8_000 });
    expect(session?.metadata).toEqual({
      dropin: { protocol: 'openai', recall: true, conversationKey: null },
    });
    expect(await storedMessages(t, 't-create', synced.session.id)).toEqual([
      expect.objectContaining({ role: 'system', parts: [{ type: 'text', text: 'You are terse.' }] }),
      expect.objectContaining({ role: 'user', parts: [{ type: 'text', text: 'list the files' }] }),
      expect.objectContaining({
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'call_1', status: 'pending', output: null }],
      }),
    ]);
  });

  it('extends the stored chain: the tool result lands on the stored call, each message stored once', async () => {
    const history = [system('sys'), user('list the files')];
    const created = await turn(deps, chatRequest('t-extend', history), toolCall('call_1', 'ls'));
    history.push(toolCall('call_1', 'ls'), toolResult('call_1', 'a.ts\nb.ts'));
    const second = await turn(deps, chatRequest('t-extend', history), reply('Two files.'));
    expect(second).toMatchObject({ outcome: 'extended', session: created.session, answerPosition: 4 });
    history.push(reply('Two files.'), user('thanks'));
    const third = await syncConversation(deps, chatRequest('t-extend', history));
    expect(third).toMatchObject({ outcome: 'extended', session: created.session, answerPosition: 6 });

    const stored = await storedMessages(t, 't-extend', created.session.id);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'assistant', 'user']);
    expect(stored[2]?.parts).toEqual([
      { type: 'tool', callId: 'call_1', status: 'completed', output: 'a.ts\nb.ts' },
    ]);
    expect(stored[3]?.parts).toEqual([{ type: 'text', text: 'Two files.' }]);
    // The answer's raw body is dropped once the chain moved past it.
    const last = await lastConversationLink(t.database.db, third.chain.sessionPk);
    expect(last).toMatchObject({ position: 5, answer: false });
  });

  it('answers an identical retry with the stored answer, for ten minutes, writing nothing', async () => {
    const request = [system('sys'), user('retry me')];
    const created = await turn(deps, chatRequest('t-replay', request), reply('the answer'));
    const before = await storedMessages(t, 't-replay', created.session.id);

    const retried = await syncConversation(deps, chatRequest('t-replay', request));
    expect(retried).toMatchObject({ outcome: 'replayed', session: created.session, answerPosition: 2 });
    expect(retried.replay).toEqual({ protocol: 'openai', body: completion(reply('the answer')) });
    expect(await storedMessages(t, 't-replay', created.session.id)).toEqual(before);

    const saved = clock.now;
    clock.now = new Date(saved.getTime() + REPLAY_WINDOW_MS + 1_000);
    try {
      const late = await syncConversation(deps, chatRequest('t-replay', request));
      // Past the window the request is a history without its last answer: a cut, so a new session.
      expect(late).toMatchObject({ outcome: 'diverged', divergedFrom: created.session.id, replay: null });
      expect(await storedMessages(t, 't-replay', created.session.id)).toEqual(before);
    } finally {
      clock.now = saved;
    }
  });

  it("takes the client's own rendering of the stored answer as its echo", async () => {
    const history = [system('sys'), user('run it')];
    const created = await turn(deps, chatRequest('t-echo', history), toolCall('call_9', 'make'));
    // The agent re-serialises the arguments (same call id), and answers the call.
    const echoed = {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_9', type: 'function', function: { name: 'bash', arguments: '{ "command": "make" }' } },
      ],
    };
    history.push(echoed, toolResult('call_9', 'ok'));
    const next = await turn(deps, chatRequest('t-echo', history), reply('  Built.'));
    expect(next).toMatchObject({ outcome: 'extended', session: created.session });
    // A trimmed-equal text echo too.
    history.push(reply('Built.'), user('again'));
    const after = await syncConversation(deps, chatRequest('t-echo', history));
    expect(after).toMatchObject({ outcome: 'extended', session: created.session });
    const stored = await storedMessages(t, 't-echo', created.session.id);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'assistant', 'user']);
    expect(stored[2]?.parts).toEqual([{ type: 'tool', callId: 'call_9', status: 'completed', output: 'ok' }]);
    // The chain continues from the client's form: the same request again is a plain extension.
    expect(await syncConversation(deps, chatRequest('t-echo', history))).toMatchObject({
      outcome: 'extended',
      session: created.session,
    });
  });

  it('takes a retry after a failed upstream call as the same request: nothing written twice', async () => {
    const history = [system('sys'), user('upstream down'), toolCall('u1', 'ls'), toolResult('u1', 'a')];
    const first = await syncConversation(deps, chatRequest('t-retry', history));
    const before = await storedMessages(t, 't-retry', first.session.id);
    // No answer was recorded (the upstream failed): the client sends the same request again.
    const again = await syncConversation(deps, chatRequest('t-retry', history));
    expect(again).toMatchObject({
      outcome: 'extended',
      session: first.session,
      replay: null,
      answerPosition: 4,
    });
    expect(await storedMessages(t, 't-retry', first.session.id)).toEqual(before);
  });

  it('uses the header session the API created, and keeps recall off when the first request says so', async () => {
    await newSession(t, 't-header', 'made-by-api');
    const history = [system('sys'), user('hello')];
    const synced = await turn(deps, chatRequest('t-header', history, { header: 'made-by-api' }), reply('hi'));
    expect(synced).toMatchObject({ outcome: 'extended', session: { id: 'made-by-api' }, recall: true });
    expect(await storedMessages(t, 't-header', 'made-by-api')).toHaveLength(3);

    const quiet = await syncConversation(
      deps,
      chatRequest('t-header', history, { header: 'no-recall', overrides: { recall: false } }),
    );
    expect(quiet).toMatchObject({ outcome: 'created', recall: false });
    // Later requests need not repeat the header's overrides: the session keeps them.
    history.push(reply('hi'));
    expect(
      await syncConversation(deps, chatRequest('t-header', history, { header: 'no-recall', overrides: {} })),
    ).toMatchObject({ outcome: 'extended', recall: false });
  });

  it('refuses a session header that cannot be a session id, writing nothing', async () => {
    const refused = await syncConversation(
      deps,
      chatRequest('t-bad-header', [user('x')], { header: 'has space' }),
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidInput);
    expect(await findSession(t.database.db, 't-bad-header', 'has space')).toBeNull();
  });

  it('refuses a tool result for a call the conversation never made, writing nothing', async () => {
    const history = [system('sys'), user('go')];
    const created = await turn(deps, chatRequest('t-unknown', history), reply('ok'));
    const before = await storedMessages(t, 't-unknown', created.session.id);
    history.push(reply('ok'), toolResult('call_missing', 'x'), user('and?'));
    const refused = await syncConversation(deps, chatRequest('t-unknown', history)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DropInInputError);
    expect((refused as DropInInputError).path).toEqual(['messages', 3]);
    expect(await storedMessages(t, 't-unknown', created.session.id)).toEqual(before);
    // A first request made only of such results creates no session either.
    const fresh = await syncConversation(deps, chatRequest('t-unknown-2', [toolResult('c', 'x')])).catch(
      (e: unknown) => e,
    );
    expect(fresh).toBeInstanceOf(DropInInputError);
  });
});
