/**
 * A recall query right after a prune's marks commit, before the prune job flags what it cleared
 * (db `markPrunedRecallable` runs after the marks are served): the query finds the cleared
 * outputs by their words all the same, once each, and nothing the view still shows.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PruningPolicy } from '@compactor/core';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { pruneToolOutputs } from './prune-selection';
import { RECALL_UNFLAGGED_MARKS, searchRecall } from './recall';
import { markPrunedRecallable } from './recallable';

const t = useTestDatabase();

/** Prune everything but the newest user turn. */
const pruning: PruningPolicy = {
  protectTokens: 0,
  minimumTokens: 0,
  protectedTools: [],
  protectUserTurns: 1,
  cacheAware: null,
  cacheHorizonTurns: 10,
};

const search = (sessionPk: number, query: string) =>
  searchRecall(t.db, sessionPk, { query, limit: 10, excerptChars: 200, pinSystemMessages: true });

/** `count` assistant turns, each reading module<n> (`call<n>`), then a user turn. */
async function sessionWithReads(count: number, first = 1) {
  const session = await createTestSession(t.db, 'tenant-unflagged');
  await appendTestMessages(t.db, session.pk, [
    ...Array.from({ length: count }, (_, i) =>
      newMessage('assistant', [tool(`call${first + i}`, `source of module${first + i}: parser quoting`)], {
        finish: 'tool-calls',
      }),
    ),
    newMessage('user', [text('module0 is still in view: parser quoting')]),
  ]);
  return session;
}

async function prune(sessionPk: number, by: string) {
  const marked = await pruneToolOutputs(t.db, sessionPk, {
    coversThroughSeq: 1_000_000,
    pinSystemMessages: true,
    pruning,
    at: new Date(),
    by,
  });
  expect(marked.markedSeqs).not.toBeNull();
  return marked.markedSeqs!;
}

async function flaggedCount(sessionPk: number): Promise<number> {
  const { rows } = await t.db.execute<{ n: number }>(
    sql`select count(*)::int as n from parts where session_pk = ${sessionPk} and recallable`,
  );
  return rows[0]!.n;
}

describe('a recall query before the prune job flags its marks', () => {
  it('finds the cleared outputs by their words, once each, and leaves the view out', async () => {
    const session = await sessionWithReads(3);
    const marked = await prune(session.pk, 'prn_1');
    // The marks are served now; nothing is flagged or indexed yet.
    expect(await flaggedCount(session.pk)).toBe(0);
    const hits = await search(session.pk, 'module2');
    expect(hits.map((h) => [h.callId, h.source])).toEqual([['call2', 'cleared']]);
    expect(hits[0]!.excerpt).toContain('source of module2');
    // All three cleared outputs, newest first on equal rank; the user's text is in view.
    expect((await search(session.pk, 'parser quoting')).map((h) => h.callId)).toEqual([
      'call3',
      'call2',
      'call1',
    ]);

    // Once flagged they come from the index: the same hits, never twice.
    expect(await markPrunedRecallable(t.db, session.pk, 'prn_1', marked, 500, { yieldRatio: 0 })).toBe(3);
    expect(await flaggedCount(session.pk)).toBe(3);
    expect((await search(session.pk, 'parser quoting')).map((h) => h.callId)).toEqual([
      'call3',
      'call2',
      'call1',
    ]);
  });

  it("finds a later prune's marks above flagged ones, and half-flagged marks from both sides", async () => {
    const session = await sessionWithReads(4);
    const first = await prune(session.pk, 'prn_a');
    await markPrunedRecallable(t.db, session.pk, 'prn_a', first, 500, { yieldRatio: 0 });
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call5', 'source of module5: lexer')], { finish: 'tool-calls' }),
      newMessage('assistant', [tool('call6', 'source of module6: lexer')], { finish: 'tool-calls' }),
      newMessage('user', [text('next')]),
    ]);
    const second = await prune(session.pk, 'prn_b');
    expect((await search(session.pk, 'lexer')).map((h) => h.callId)).toEqual(['call6', 'call5']);
    // Flagging stopped after its first chunk of one mark (the older): the newer waits.
    await markPrunedRecallable(t.db, session.pk, 'prn_b', { first: second.first, last: second.first }, 1, {
      yieldRatio: 0,
    });
    expect(await flaggedCount(session.pk)).toBe(5);
    expect((await search(session.pk, 'lexer')).map((h) => h.callId)).toEqual(['call6', 'call5']);
    expect((await search(session.pk, 'module1')).map((h) => h.callId)).toEqual(['call1']);
  });

  it(`reads at most ${RECALL_UNFLAGGED_MARKS} unflagged marks, newest first`, async () => {
    const count = RECALL_UNFLAGGED_MARKS + 2;
    const session = await sessionWithReads(count);
    await prune(session.pk, 'prn_many');
    // Marks of seqs 1 to count: the walk reads seqs count down to 3; 1 and 2 wait for the job.
    expect((await search(session.pk, `module${count}`)).map((h) => h.callId)).toEqual([`call${count}`]);
    expect((await search(session.pk, 'module3')).map((h) => h.callId)).toEqual(['call3']);
    expect(await search(session.pk, 'module2')).toEqual([]);
  });
});
