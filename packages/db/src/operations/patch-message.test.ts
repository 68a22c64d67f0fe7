import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { ToolPart } from '@compactor/core';
import { ConflictError, NotFoundError } from '../errors';
import { appendTestMessages } from '../test-support/append-test-messages';
import { loadHistoryPage } from './load-messages';
import { patchMessage } from './patch-message';
import { markPartsCompacted } from '../queries/parts';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

async function streamedTurn() {
  const session = await createTestSession(t.db);
  await appendTestMessages(t.db, session.pk, [
    newMessage('assistant', [text('let me look'), tool('call_1', null, { status: 'pending' })], {
      id: 'turn',
    }),
  ]);
  return session;
}

describe('patchMessage', () => {
  it('finishes a streamed turn: tool part upserted by callId, new parts appended, usage and finish set', async () => {
    const session = await streamedTurn();
    const message = await patchMessage(t.db, session.pk, 'turn', {
      finish: 'tool-calls',
      usage: { input: 1200, output: 80, reasoning: 0, cacheRead: 300, cacheWrite: 0 },
      parts: [tool('call_1', 'file contents'), tool('call_2', null, { status: 'running' })],
    });
    expect(message.finish).toBe('tool-calls');
    expect(message.usage).toEqual({ input: 1200, output: 80, reasoning: 0, cacheRead: 300, cacheWrite: 0 });
    const tools = message.parts.filter((p): p is ToolPart => p.type === 'tool');
    expect(tools.map((p) => [p.callId, p.status, p.output])).toEqual([
      ['call_1', 'completed', 'file contents'],
      ['call_2', 'running', null],
    ]);
    expect(message.parts[0]).toMatchObject({ type: 'text', text: 'let me look' });
    expect(tools[0]?.outputTokens).toBe(Math.ceil('file contents'.length / 4));
  });

  it.each([
    ['moves status backwards', tool('call_1', null, { status: 'pending' }), 'completed'],
    ['changes a finished result', tool('call_1', 'other output'), 'completed'],
    ['changes the tool of a call', tool('call_1', 'file contents', { tool: 'write' }), 'completed'],
  ])('rejects a patch that %s', async (_label, part, setupStatus) => {
    const session = await streamedTurn();
    expect(setupStatus).toBe('completed');
    await patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'file contents')] });
    await expect(patchMessage(t.db, session.pk, 'turn', { parts: [part] })).rejects.toBeInstanceOf(
      ConflictError,
    );
  });

  it('accepts re-sending the same finished part (retried PATCH)', async () => {
    const session = await streamedTurn();
    await patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'file contents')] });
    const again = await patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'file contents')] });
    expect(again.parts.filter((p) => p.type === 'tool')).toHaveLength(1);
  });

  it('accepts an identical retry whose tool input jsonb stores with its keys reordered', async () => {
    const session = await streamedTurn();
    const finished = () =>
      tool('call_1', 'file contents', { input: { b: 1, a: 2, nested: { z: [1, { y: 0, x: 1 }], c: 'é' } } });
    await patchMessage(t.db, session.pk, 'turn', { parts: [finished()] });
    const again = await patchMessage(t.db, session.pk, 'turn', { parts: [finished()] });
    expect(again.parts.find((p) => p.type === 'tool')).toMatchObject({
      status: 'completed',
      input: { b: 1, a: 2 },
    });
  });

  it('returns the message exactly as it is stored afterwards (a pruned call, jsonb key order, added parts)', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage(
        'assistant',
        [
          text('two calls'),
          tool('call_done', 'x'.repeat(400)),
          tool('call_open', null, { status: 'running', input: { path: 'a.ts' } }),
        ],
        { id: 'turn' },
      ),
    ]);
    const [stored] = (await loadHistoryPage(t.db, session.pk, { afterSeq: -1, limit: 10 })).messages;
    await markPartsCompacted(t.db, session.pk, [{ seq: stored!.seq, callId: 'call_done' }], {
      at: new Date('2026-11-27T02:00:00Z'),
      by: 'test',
    });

    const patched = await patchMessage(t.db, session.pk, 'turn', {
      finish: 'tool-calls',
      usage: { input: 900, output: 40, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
      parts: [
        // jsonb stores these keys in another order: the result shows the stored order.
        tool('call_open', 'done', { input: { path: 'a.ts', zeta: 1, a: { y: 2, b: 3 } } }),
        text('and a note after the calls'),
        tool('call_new', null, { status: 'pending' }),
      ],
    });
    const [after] = (await loadHistoryPage(t.db, session.pk, { afterSeq: -1, limit: 10 })).messages;
    expect(patched).toEqual(after);
    expect(JSON.stringify(patched)).toBe(JSON.stringify(after));
    expect(patched.parts.map((p) => (p.type === 'tool' ? `${p.callId}:${p.status}` : p.type))).toEqual([
      'text',
      'call_done:completed',
      'call_open:completed',
      'text',
      'call_new:pending',
    ]);
    expect(patched.parts[1]).toMatchObject({ compactedAt: '2026-11-27T02:00:00.000Z' });
  });

  /**
   * Another writer holds the message's lock (a PATCH in flight, say the client's first try of
   * a request it retries) and commits `write` after ~300 ms; meanwhile `patch` runs and waits.
   */
  async function whileLockedBy(
    sessionPk: number,
    write: (client: pg.Client, messagePk: string) => Promise<unknown>,
    patch: () => Promise<unknown>,
  ) {
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query<{ pk: string }>(
        "select pk from messages where session_pk = $1 and id = 'turn' for update",
        [sessionPk],
      );
      await write(client, rows[0]!.pk);
      const waiting = patch().then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      await sleep(300);
      await client.query('commit');
      return await waiting;
    } finally {
      await client.end();
    }
  }

  it('a PATCH that waited for the lock sees what the holder committed: a finished call stays finished', async () => {
    const session = await streamedTurn();
    const outcome = await whileLockedBy(
      session.pk,
      (client, pk) =>
        client.query(
          "update parts set tool_status = 'completed', tool_output = 'A' where message_pk = $1 and call_id = 'call_1'",
          [pk],
        ),
      () => patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_1', 'B')] }),
    );
    expect(outcome).toMatchObject({ error: expect.any(ConflictError) });
    const [stored] = (await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 })).messages;
    expect(stored?.parts.find((p) => p.type === 'tool')).toMatchObject({ status: 'completed', output: 'A' });
  });

  it('a PATCH that waited for the lock appends after the parts the holder added, and returns them', async () => {
    const session = await streamedTurn();
    const outcome = await whileLockedBy(
      session.pk,
      (client, pk) =>
        client.query(
          `insert into parts (message_pk, session_pk, seq, idx, type, call_id, tool, tool_status, tool_input, tokens, output_tokens)
           select pk, session_pk, seq, 2, 'tool', 'call_2', 'read', 'running', '{}'::jsonb, 1, 0 from messages where pk = $1`,
          [pk],
        ),
      () => patchMessage(t.db, session.pk, 'turn', { parts: [tool('call_3', null)] }),
    );
    expect(outcome).toHaveProperty('value');
    const returned = (outcome as { value: Awaited<ReturnType<typeof patchMessage>> }).value;
    const [stored] = (await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 })).messages;
    expect(stored?.parts.map((p) => (p.type === 'tool' ? p.callId : p.type))).toEqual([
      'text',
      'call_1',
      'call_2',
      'call_3',
    ]);
    expect(returned).toEqual(stored);
  });

  it('refuses to change a message written by a compaction', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [text('summary')], { id: 's', summary: true }),
    ]);
    await expect(patchMessage(t.db, session.pk, 's', { finish: 'stop' })).rejects.toBeInstanceOf(
      ConflictError,
    );
  });

  it('fails with NotFoundError for an unknown message', async () => {
    const session = await createTestSession(t.db);
    await expect(patchMessage(t.db, session.pk, 'nope', { finish: 'stop' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});
