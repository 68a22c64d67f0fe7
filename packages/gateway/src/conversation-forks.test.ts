/**
 * Where the conversation store must not merge: a client that edits its history gets a new session
 * (nothing stored changes), later requests under the same header follow the fork, two tenants
 * never share a session, concurrent identical requests write once, and a deleted session takes
 * its chain with it.
 */
import { describe, expect, it } from 'vitest';
import { deleteSession, findSession, lastConversationLink } from '@compactor/db';
import { SessionMessages } from '@compactor/sessions';
import { useTestSessions } from '@compactor/sessions/testing';
import { syncConversation } from './conversation';
import {
  chatRequest,
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
const deps = conversationDeps(t, { now: new Date('2026-03-01T12:00:00Z') });

describe('syncConversation when histories part', () => {
  it('starts a new session from the whole request when the client edits its history', async () => {
    const history = [system('sys'), user('first question'), reply('first answer'), user('second')];
    const original = await turn(deps, chatRequest('t-fork', history.slice(0, 2)), reply('first answer'));
    await turn(deps, chatRequest('t-fork', history), reply('second answer'));
    const before = await storedMessages(t, 't-fork', original.session.id);

    const edited = [system('sys'), user('first question, edited'), reply('first answer'), user('second')];
    const fork = await syncConversation(deps, chatRequest('t-fork', edited));
    expect(fork).toMatchObject({ outcome: 'diverged', divergedFrom: original.session.id });
    expect(fork.session.id).not.toBe(original.session.id);
    expect(await storedMessages(t, 't-fork', original.session.id)).toEqual(before);
    const forked = await storedMessages(t, 't-fork', fork.session.id);
    expect(forked.map((m) => m.parts[0])).toEqual(
      edited.map((m) => ({ type: 'text', text: m['content'] as string })),
    );
    const session = await findSession(t.database.db, 't-fork', fork.session.id);
    expect(session?.metadata).toMatchObject({ dropin: { divergedFrom: original.session.id } });
    expect(session).toMatchObject({ contextWindow: 8_000 });
  });

  it('takes an answer echoed with other tool calls as an edit: a new session', async () => {
    const history = [system('sys'), user('call something')];
    const original = await turn(deps, chatRequest('t-echo-edit', history), toolCall('call_a', 'ls'));
    history.push(toolCall('call_b', 'ls'), toolResult('call_b', 'x'));
    const edited = await syncConversation(deps, chatRequest('t-echo-edit', history));
    expect(edited).toMatchObject({ outcome: 'diverged', divergedFrom: original.session.id });
    const stored = await storedMessages(t, 't-echo-edit', original.session.id);
    expect(stored[2]?.parts).toEqual([{ type: 'tool', callId: 'call_a', status: 'pending', output: null }]);
  });

  it('follows the fork under the same session header', async () => {
    const header = 'agent-run-7';
    const history = [system('sys'), user('q1')];
    const first = await turn(deps, chatRequest('t-key', history, { header }), toolCall('c1', 'ls'));
    expect(first).toMatchObject({ outcome: 'created', session: { id: header } });

    const cut = [system('sys'), user('q1, said otherwise')];
    const fork = await turn(deps, chatRequest('t-key', cut, { header }), reply('a2'));
    expect(fork).toMatchObject({ outcome: 'diverged', divergedFrom: header });

    cut.push(reply('a2'), user('q3'));
    const next = await syncConversation(deps, chatRequest('t-key', cut, { header }));
    expect(next).toMatchObject({ outcome: 'extended', session: fork.session });
    // The first session's conversation goes on too, when its client sends it.
    history.push(toolCall('c1', 'ls'), toolResult('c1', 'x'));
    expect(await syncConversation(deps, chatRequest('t-key', history, { header }))).toMatchObject({
      outcome: 'extended',
      session: { id: header },
    });
  });

  it('keeps identical conversations of two tenants apart', async () => {
    const history = [system('same'), user('same question')];
    const a = await turn(deps, chatRequest('t-tenant-a', history), reply('same'));
    const b = await turn(deps, chatRequest('t-tenant-b', history), reply('same'));
    expect(a.outcome).toBe('created');
    expect(b.outcome).toBe('created');
    expect(b.chain.sessionPk).not.toBe(a.chain.sessionPk);
    history.push(reply('same'), user('next'));
    expect(await syncConversation(deps, chatRequest('t-tenant-b', history))).toMatchObject({
      outcome: 'extended',
      session: b.session,
    });
    expect(await storedMessages(t, 't-tenant-a', a.session.id)).toHaveLength(3);
  });

  it('writes concurrent identical requests once, in one session', async () => {
    const history = [system('sys'), user('at once'), toolCall('k1', 'pwd'), toolResult('k1', '/work')];
    const results = await Promise.all([
      turn(deps, chatRequest('t-race', history), reply('done')),
      turn(deps, chatRequest('t-race', history), reply('done')),
      turn(deps, chatRequest('t-race', history), reply('done')),
    ]);
    expect(new Set(results.map((r) => r.session.id)).size).toBe(1);
    // One creates; each twin after it finds the session, and is answered the stored answer if the
    // first one's answer was recorded by then (an identical retry), else sent upstream.
    const outcomes = results.map((r) => r.outcome);
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
    expect(outcomes.filter((o) => o !== 'created').every((o) => o === 'extended' || o === 'replayed')).toBe(
      true,
    );
    const stored = await storedMessages(t, 't-race', results[0]!.session.id);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'assistant']);
    expect(stored[2]?.parts).toEqual([{ type: 'tool', callId: 'k1', status: 'completed', output: '/work' }]);

    // The next turn, sent twice at once: its tool result and message are written once.
    history.push(reply('done'), user('next'), toolCall('k2', 'ls'));
    const first = await turn(deps, chatRequest('t-race', history), toolCall('k3', 'cat'));
    history.push(toolCall('k3', 'cat'), toolResult('k3', 'contents'));
    const twins = await Promise.all([0, 1].map(() => syncConversation(deps, chatRequest('t-race', history))));
    expect(twins.map((r) => r.outcome)).toEqual(['extended', 'extended']);
    expect(twins.map((r) => r.session)).toEqual([first.session, first.session]);
    const after = await storedMessages(t, 't-race', first.session.id);
    expect(after.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'assistant',
      'user',
      'assistant',
      'assistant',
    ]);
    expect(after[6]?.parts).toEqual([
      { type: 'tool', callId: 'k3', status: 'completed', output: 'contents' },
    ]);
  });

  it('writes identical requests of two processes (two write queues) once, in one session', async () => {
    const other = new SessionMessages(t.resources, t.limits);
    try {
      const elsewhere = { ...deps, messages: other };
      const history = [system('sys'), user('two replicas'), toolCall('r1', 'pwd'), toolResult('r1', '/srv')];
      const results = await Promise.all([
        syncConversation(deps, chatRequest('t-replicas', history)),
        syncConversation(elsewhere, chatRequest('t-replicas', history)),
      ]);
      expect(results[1]?.session).toEqual(results[0]?.session);
      const stored = await storedMessages(t, 't-replicas', results[0]!.session.id);
      expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
      expect(stored[2]?.parts).toEqual([{ type: 'tool', callId: 'r1', status: 'completed', output: '/srv' }]);
    } finally {
      await other.close();
    }
  });

  it('recovers an answer stored without its link: the echo is not appended again, its result lands', async () => {
    const history = [system('sys'), user('cut short')];
    const created = await turn(deps, chatRequest('t-unlinked', history), toolCall('w1', 'ls'));
    // The process died between storing the answer and linking it.
    await t.database.db.$client.query(
      'delete from conversation_links where session_pk = $1 and position = 2',
      [created.chain.sessionPk],
    );
    history.push(toolCall('w1', 'ls'), toolResult('w1', 'listing'));
    const next = await syncConversation(deps, chatRequest('t-unlinked', history));
    expect(next).toMatchObject({ outcome: 'extended', session: created.session });
    const stored = await storedMessages(t, 't-unlinked', created.session.id);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect(stored[2]?.parts).toEqual([
      { type: 'tool', callId: 'w1', status: 'completed', output: 'listing' },
    ]);
    expect(await lastConversationLink(t.database.db, created.chain.sessionPk)).toMatchObject({ position: 3 });
  });

  it('takes an answer and a user message stored without their links as stored: each once, then linked', async () => {
    const history = [system('sys'), user('cut short')];
    const created = await turn(deps, chatRequest('t-unlinked-text', history), reply('noted'));
    // The answer (a text reply, with its usage) was stored but not linked, and so was the next
    // request's user message: a process died after each write.
    history.push(reply('noted'), user('go on'));
    await syncConversation(deps, chatRequest('t-unlinked-text', history));
    await t.database.db.$client.query(
      'delete from conversation_links where session_pk = $1 and position >= 2',
      [created.chain.sessionPk],
    );
    const next = await syncConversation(deps, chatRequest('t-unlinked-text', history));
    expect(next).toMatchObject({ outcome: 'extended', session: created.session });
    const stored = await storedMessages(t, 't-unlinked-text', created.session.id);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(await lastConversationLink(t.database.db, created.chain.sessionPk)).toMatchObject({ position: 3 });
  });

  it('forgets the chain of a deleted session', async () => {
    const history = [system('sys'), user('delete me')];
    const created = await turn(deps, chatRequest('t-delete', history), reply('ok'));
    const session = await findSession(t.database.db, 't-delete', created.session.id);
    await deleteSession(t.database.db, session!.pk);
    expect(await lastConversationLink(t.database.db, session!.pk)).toBeNull();
    history.push(reply('ok'), user('again'));
    const again = await syncConversation(deps, chatRequest('t-delete', history));
    expect(again.outcome).toBe('created');
    expect(again.chain.sessionPk).not.toBe(session!.pk);
  });
});
