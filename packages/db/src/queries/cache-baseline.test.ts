/**
 * The sums a change's cache effect is measured against, over the context view: stored counts
 * given by hand, so each expected value is their sum.
 */
import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { selectCacheBaseline } from './cache-baseline';
import { selectCacheHead } from './cache-head';

const t = useTestDatabase();

const usage = { input: 100, output: 20, reasoning: 0, cacheRead: 900, cacheWrite: 250 };

/** System 300 · user 40 · assistant (text 10, read 5 + 100, read 5 + 200) · user 40 · assistant 30. */
async function session() {
  const row = await createTestSession(t.db);
  await appendTestMessages(t.db, row.pk, [
    newMessage('system', [text('rules', 300)]),
    newMessage('user', [text('question', 40)]),
    newMessage('assistant', [text('reading', 10), tool('a', 'x'.repeat(400)), tool('b', 'y'.repeat(800))], {
      usage: { ...usage, cacheRead: 500 },
      createdAt: new Date('2026-11-27T11:00:00Z'),
    }),
    newMessage('user', [text('and?', 40)]),
    newMessage('assistant', [text('done', 30)], { usage, createdAt: new Date('2026-11-27T11:58:00Z') }),
  ]);
  return row;
}

describe('selectCacheBaseline', () => {
  it("sums the view, its pinned head, and the prefix before a changed part, that part's message included", async () => {
    const row = await session();
    const baseline = await selectCacheBaseline(t.db, row.pk, {
      pinSystemMessages: true,
      changedFrom: { seq: 3, idx: 2 },
    });
    expect(baseline).toEqual({
      storedTokens: 300 + 40 + 10 + 105 + 205 + 40 + 30,
      pinnedTokens: 300,
      // The system prompt, the user turn, then the text and the first read before the changed part.
      prefixTokens: 300 + 40 + 10 + 105,
      prunedSavedTokens: 0,
      // The newest assistant turn with a usage report: 900 read + 250 written.
      lastUsage: { cachedTokens: 1_150, at: new Date('2026-11-27T11:58:00Z') },
    });
  });

  it('has no prefix when nothing changed, and no usage before any model call', async () => {
    const row = await createTestSession(t.db);
    await appendTestMessages(t.db, row.pk, [newMessage('user', [text('hello', 5)])]);
    expect(
      await selectCacheBaseline(t.db, row.pk, { pinSystemMessages: true, prunedBy: 'prn_none' }),
    ).toEqual({
      storedTokens: 5,
      pinnedTokens: 0,
      prefixTokens: null,
      prunedSavedTokens: 0,
      lastUsage: null,
    });
  });
});

describe('selectCacheHead', () => {
  it('walks the view only as far as the cached tokens, in batches, and finds the changed part', async () => {
    const row = await session();
    // Cached 1,150 tokens: more than the whole view (730), so it is walked to its end.
    const whole = await selectCacheHead(t.db, row.pk, {
      pinSystemMessages: true,
      changedFrom: { seq: 3, idx: 2 },
      batch: 2,
    });
    expect(whole).toMatchObject({
      pinnedTokens: 300,
      prefixTokens: 300 + 40 + 10 + 105,
      headTokens: 300 + 40 + 10 + 105 + 205 + 40 + 30,
      complete: true,
      // The report is the newest message: nothing after it.
      tokensAfterReport: 0,
      report: { seq: 5, cachedTokens: 1_150, at: new Date('2026-11-27T11:58:00Z'), usage },
    });
  });

  it('stops at the cached tokens: what changes past them is past the cache', async () => {
    const row = await createTestSession(t.db);
    await appendTestMessages(t.db, row.pk, [
      newMessage('system', [text('rules', 300)]),
      newMessage('user', [text('question', 40)]),
      newMessage('assistant', [text('answer', 30)], { usage: { ...usage, cacheRead: 250, cacheWrite: 80 } }),
      newMessage('user', [text('more', 40)]),
      newMessage('assistant', [text('reading', 10), tool('a', 'x'.repeat(400))]),
    ]);
    const head = await selectCacheHead(t.db, row.pk, {
      pinSystemMessages: true,
      changedFrom: { seq: 5, idx: 1 },
      batch: 1,
    });
    // 300 + 40 pass the 330 cached tokens: the walk stops before the changed part.
    expect(head).toMatchObject({ prefixTokens: 340, headTokens: 340, complete: false });
    // The two messages after the report: 40 + 10 + 105.
    expect(head.tokensAfterReport).toBe(155);
  });
});
