import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../errors';
import { loadHistoryPage } from './load-messages';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

describe('appending a batch (appendToSession, by session pk)', () => {
  it('assigns consecutive seqs in batch order and stores parts with their token counts', async () => {
    const session = await createTestSession(t.db);
    const result = await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('read a.ts please', 4)], { id: 'u1' }),
      newMessage('assistant', [text('reading', 2), tool('call_1', 'export const a = 1;')], { id: 'a1' }),
    ]);
    expect(result).toEqual([
      { id: 'u1', seq: 1, created: true },
      { id: 'a1', seq: 2, created: true },
    ]);
    const page = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 });
    expect(page.nextAfterSeq).toBeNull();
    expect(page.messages.map((m) => [m.id, m.seq, m.parts.map((p) => [p.type, p.tokens])])).toEqual([
      ['u1', 1, [['text', 4]]],
      [
        'a1',
        2,
        [
          ['text', 2],
          ['tool', 10],
        ],
      ],
    ]);
    expect(page.messages[1]?.parts[1]).toMatchObject({
      callId: 'call_1',
      output: 'export const a = 1;',
      outputTokens: 5,
    });
  });

  it('treats a re-post with identical content as a no-op returning the same seq', async () => {
    const session = await createTestSession(t.db);
    const message = newMessage('user', [text('hello')], { id: 'same' });
    await appendTestMessages(t.db, session.pk, [message]);
    const again = await appendTestMessages(t.db, session.pk, [
      message,
      newMessage('user', [text('next')], { id: 'n' }),
    ]);
    expect(again).toEqual([
      { id: 'same', seq: 1, created: false },
      { id: 'n', seq: 2, created: true },
    ]);
    const page = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 });
    expect(page.messages).toHaveLength(2);
  });

  it('rejects a re-post with different content and writes nothing of the batch', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [newMessage('user', [text('original')], { id: 'x' })]);
    const attempt = appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('fresh')], { id: 'y' }),
      newMessage('user', [text('changed')], { id: 'x' }),
    ]);
    await expect(attempt).rejects.toBeInstanceOf(ConflictError);
    await expect(attempt).rejects.toMatchObject({ details: { messageIds: ['x'] } });
    const page = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 });
    expect(page.messages.map((m) => m.id)).toEqual(['x']);
  });

  it('keeps seqs gap-free and unique under concurrent appends to one session', async () => {
    const session = await createTestSession(t.db);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        appendTestMessages(t.db, session.pk, [
          newMessage('user', [text(`m${i}a`)], { id: `m${i}a` }),
          newMessage('assistant', [text(`m${i}b`)], { id: `m${i}b` }),
        ]),
      ),
    );
    const page = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 100 });
    expect(page.messages.map((m) => m.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    // Each batch stayed contiguous and in order.
    for (let i = 0; i < 40; i += 2) {
      expect(page.messages[i]?.id.replace(/a$/, '')).toBe(page.messages[i + 1]?.id.replace(/b$/, ''));
    }
  });

  it('stores one copy when the same new message is posted twice at once', async () => {
    const session = await createTestSession(t.db);
    const message = newMessage('user', [text('once')], { id: 'race' });
    const results = await Promise.all([
      appendTestMessages(t.db, session.pk, [message]),
      appendTestMessages(t.db, session.pk, [message]),
    ]);
    expect(results.flat().map((r) => r.seq)).toEqual([1, 1]);
    expect(results.flat().filter((r) => r.created)).toHaveLength(1);
  });

  it('fails with NotFoundError for a session that does not exist', async () => {
    await expect(appendTestMessages(t.db, 987654, [newMessage('user', [text('x')])])).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });

  it('pages the raw history by seq', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(
      t.db,
      session.pk,
      Array.from({ length: 5 }, (_, i) => newMessage('user', [text(`m${i}`)], { id: `p${i}` })),
    );
    const first = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 2 });
    expect(first.messages.map((m) => m.seq)).toEqual([1, 2]);
    expect(first.nextAfterSeq).toBe(2);
    const last = await loadHistoryPage(t.db, session.pk, { afterSeq: 4, limit: 2 });
    expect(last.messages.map((m) => m.seq)).toEqual([5]);
    expect(last.nextAfterSeq).toBeNull();
  });
});

describe('deferred tool results', () => {
  it('rejects a second part for a call still unfinished in an earlier message, naming the message to PATCH', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('c1', null)], { id: 'calls' }),
    ]);
    const attempt = appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('c1', 'late result')], { id: 'late' }),
    ]);
    await expect(attempt).rejects.toBeInstanceOf(ConflictError);
    await expect(attempt).rejects.toMatchObject({ details: { callId: 'c1', messageId: 'calls' } });
  });

  it('rejects the same shape inside one batch', async () => {
    const session = await createTestSession(t.db);
    const attempt = appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('c2', null)], { id: 'a' }),
      newMessage('assistant', [tool('c2', 'result')], { id: 'b' }),
    ]);
    await expect(attempt).rejects.toBeInstanceOf(ConflictError);
  });

  it('rejects a result for an unfinished call whatever its arguments say, in a batch or after', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [newMessage('assistant', [tool('c3', null)], { id: 'open' })]);
    for (const [i, input] of [undefined, null, {}, { path: 'elsewhere.ts' }].entries()) {
      for (const result of [
        { status: 'completed', output: 'late' },
        { status: 'error', output: null, error: 'failed' },
      ] as const) {
        const late = tool('c3', result.output, { ...result, input });
        for (const batch of [
          [newMessage('assistant', [late], { id: `late-${i}-${result.status}` })],
          [
            newMessage('assistant', [tool('c4', null, { input })], { id: `in-batch-${i}-${result.status}` }),
            newMessage('assistant', [{ ...late, callId: 'c4' }], {
              id: `in-batch-late-${i}-${result.status}`,
            }),
          ],
        ]) {
          const attempt = appendTestMessages(t.db, session.pk, batch);
          await expect(attempt, JSON.stringify(input)).rejects.toBeInstanceOf(ConflictError);
        }
      }
    }
    await expect(
      appendTestMessages(t.db, session.pk, [newMessage('assistant', [tool('c3', null)], { id: 'open-2' })]),
    ).rejects.toMatchObject({ details: { callId: 'c3', messageId: 'open' } });
    const page = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 });
    expect(page.messages.map((m) => m.id)).toEqual(['open']);
  });

  it('accepts a different call that reuses the id of an abandoned one (providers number calls per turn)', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_0', null)], { id: 'abandoned' }),
    ]);
    // Another tool, or the same tool unfinished with other arguments: not the abandoned call.
    const next = await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_0', 'listing', { tool: 'ls', input: {} })], { id: 'next-turn' }),
      newMessage('assistant', [tool('call_0', null, { input: { path: 'b.ts' } })], { id: 'turn-after' }),
    ]);
    expect(next.map((m) => m.created)).toEqual([true, true]);
  });

  it('allows a provider that reuses an id once the earlier call finished', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_0', 'first')], { id: 'a' }),
    ]);
    const second = await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_0', 'second')], { id: 'b' }),
    ]);
    expect(second[0]?.created).toBe(true);
  });
});
