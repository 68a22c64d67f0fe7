/**
 * The drop-in hash chain's queries: the longest stored prefix of a request's chain (newest session
 * first, never another tenant's, only the header's conversation when it names one), links written
 * once, and deleted with their session.
 */
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test-support/test-database';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text } from '../test-support/fixtures';
import {
  answerSlot,
  insertConversationLinks,
  lastConversationLink,
  longestChainMatch,
  rehashConversationLink,
} from './conversation-links';
import { deleteSession } from './sessions';

const t = useTestDatabase();
const now = new Date('2026-01-01T00:00:00Z');

/** Chain hashes of `labels` as one conversation: each hash covers every label before it. */
function chain(labels: string[]): Buffer[] {
  let previous = Buffer.alloc(32);
  return labels.map((label) => (previous = createHash('sha256').update(previous).update(label).digest()));
}

async function storeChain(tenantId: string, labels: string[], conversationKey: string | null = null) {
  const session = await createTestSession(t.db, tenantId);
  const hashes = chain(labels);
  await insertConversationLinks(
    t.db,
    { sessionPk: session.pk, tenantId, conversationKey },
    hashes.map((chainHash, position) => ({ position, chainHash, messageId: `m${position}` })),
    { now },
  );
  return { session, hashes };
}

describe('longestChainMatch', () => {
  it('finds the longest stored prefix of the request, in the newest session holding it', async () => {
    const older = await storeChain('chain-a', ['sys', 'hello', 'answer']);
    const newer = await storeChain('chain-a', ['sys', 'hello']);
    const request = chain(['sys', 'hello', 'answer', 'next']);
    expect(await longestChainMatch(t.db, 'chain-a', null, request)).toEqual({
      sessionPk: older.session.pk,
      position: 2,
      // With the matched session's chain end, as lastConversationLink reads it.
      end: await lastConversationLink(t.db, older.session.pk),
    });
    // Both hold the first two: the newer wins a tie.
    expect(await longestChainMatch(t.db, 'chain-a', null, chain(['sys', 'hello', 'other']))).toMatchObject({
      sessionPk: newer.session.pk,
      position: 1,
    });
    expect(await longestChainMatch(t.db, 'chain-a', null, chain(['unknown']))).toBeNull();
    expect(await longestChainMatch(t.db, 'chain-a', null, [])).toBeNull();
  });

  it('finds the shared prefix however far back the request leaves the stored chain', async () => {
    const labels = Array.from({ length: 300 }, (_, i) => `long-${i}`);
    const stored = await storeChain('chain-long', labels);
    // A fork sharing the first 40 is newer: it wins where it shares, and only there.
    const fork = await storeChain('chain-long', [...labels.slice(0, 40), 'fork']);
    for (const kept of [0, 1, 17, 39, 40, 41, 150, 299, 300]) {
      const request = chain([...labels.slice(0, kept), ...Array.from({ length: 50 }, (_, i) => `edit-${i}`)]);
      const expected =
        kept === 0
          ? null
          : { sessionPk: kept <= 40 ? fork.session.pk : stored.session.pk, position: kept - 1 };
      expect(await longestChainMatch(t.db, 'chain-long', null, request), `kept ${kept}`).toEqual(
        expected && { ...expected, end: expect.objectContaining({ position: kept <= 40 ? 40 : 299 }) },
      );
    }
  });

  it("never answers another tenant's session, however identical the conversation", async () => {
    await storeChain('chain-b', ['sys', 'same']);
    expect(await longestChainMatch(t.db, 'chain-c', null, chain(['sys', 'same']))).toBeNull();
  });

  it("under a session header, looks only at that conversation's sessions", async () => {
    const keyed = await storeChain('chain-d', ['sys', 'q'], 'conv-1');
    await storeChain('chain-d', ['sys', 'q', 'a'], 'conv-2');
    const request = chain(['sys', 'q', 'a']);
    expect(await longestChainMatch(t.db, 'chain-d', 'conv-1', request)).toMatchObject({
      sessionPk: keyed.session.pk,
      position: 1,
    });
    expect(await longestChainMatch(t.db, 'chain-d', 'conv-3', request)).toBeNull();
    // Without a header every session of the tenant counts.
    expect(await longestChainMatch(t.db, 'chain-d', null, request)).toMatchObject({ position: 2 });
  });
});

describe('conversation links', () => {
  it('writes a position once, re-hashes one, and goes with its session', async () => {
    const { session, hashes } = await storeChain('chain-e', ['sys', 'q']);
    const target = { sessionPk: session.pk, tenantId: 'chain-e', conversationKey: null };
    const again = await insertConversationLinks(
      t.db,
      target,
      [
        { position: 1, chainHash: hashes[1]!, messageId: 'other' },
        { position: 2, chainHash: Buffer.alloc(32, 7), messageId: 'answer' },
      ],
      { now, rawAnswer: { choices: [] } },
    );
    expect(again).toEqual([2]);
    const last = await lastConversationLink(t.db, session.pk);
    expect(last).toMatchObject({
      position: 2,
      messageId: 'answer',
      answer: true,
      rawAnswer: { choices: [] },
    });
    expect(last?.createdAt.toISOString()).toBe(now.toISOString());

    // jsonb refuses NUL: the kept copy of an answer carrying one stores U+FFFD instead.
    await insertConversationLinks(
      t.db,
      target,
      [{ position: 3, chainHash: Buffer.alloc(32, 8), messageId: 'nul' }],
      {
        now,
        rawAnswer: { text: 'a\u0000b' },
      },
    );
    expect(await lastConversationLink(t.db, session.pk)).toMatchObject({
      position: 3,
      rawAnswer: { text: 'a\uFFFDb' },
    });
    await t.db.execute(sql`delete from conversation_links where session_pk = ${session.pk} and position = 3`);

    const echoed = Buffer.alloc(32, 9);
    await rehashConversationLink(t.db, session.pk, 2, echoed);
    expect((await lastConversationLink(t.db, session.pk))?.chainHash.equals(echoed)).toBe(true);

    await deleteSession(t.db, session.pk);
    expect(await lastConversationLink(t.db, session.pk)).toBeNull();
    expect(await longestChainMatch(t.db, 'chain-e', null, hashes)).toBeNull();
  });

  it('drops the raw answer kept at an earlier position in the statement that links the next elements', async () => {
    const { session } = await storeChain('chain-f', ['sys', 'q']);
    const target = { sessionPk: session.pk, tenantId: 'chain-f', conversationKey: null };
    const link = (position: number) => ({ position, chainHash: Buffer.alloc(32, position), messageId: null });
    await insertConversationLinks(t.db, target, [link(2)], { now, rawAnswer: { id: 'kept' } });
    const inserted = await insertConversationLinks(t.db, target, [link(3), link(4)], {
      now,
      clearRawAnswerAt: 2,
    });
    expect(inserted).toEqual([3, 4]);
    const { rows } = await t.db.execute<{ position: number; raw_answer: unknown; answer: boolean }>(
      sql`select position, raw_answer, answer from conversation_links
          where session_pk = ${session.pk} and position >= 2 order by position`,
    );
    expect(rows).toEqual([
      { position: 2, raw_answer: null, answer: true },
      { position: 3, raw_answer: null, answer: false },
      { position: 4, raw_answer: null, answer: false },
    ]);
  });

  it('reads where an answer goes in one statement: the position linked, the session, the message stored', async () => {
    const { session } = await storeChain('chain-g', ['sys', 'q']);
    await appendTestMessages(t.db, session.pk, [newMessage('assistant', [text('a')], { id: 'answer-2' })]);
    expect(await answerSlot(t.db, session.pk, 2, 'answer-2')).toEqual({
      linked: false,
      sessionExists: true,
      messageStored: true,
    });
    expect(await answerSlot(t.db, session.pk, 1, 'answer-1')).toEqual({
      linked: true,
      sessionExists: true,
      messageStored: false,
    });
    await deleteSession(t.db, session.pk);
    expect(await answerSlot(t.db, session.pk, 2, 'answer-2')).toEqual({
      linked: false,
      sessionExists: false,
      messageStored: false,
    });
  });
});
