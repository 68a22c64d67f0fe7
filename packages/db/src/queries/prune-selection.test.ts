import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { prunedOutputMarkerTokens, type PruningPolicy } from '@compactor/core';
import { appendTestMessages } from '../test-support/append-test-messages';
import type { NewMessage } from '../operations/new-message';
import { createTestSession, newMessage } from '../test-support/fixtures';
import { pruneSelectionFixtures } from '../test-support/prune-selection';
import { pruneToolOutputs } from './prune-selection';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();
const { out, msg, markPruned, compact, expectAgreement, callIds, markedBy } = pruneSelectionFixtures(t);

/** Small budgets, so that the protection, the minimum and the stop all matter on short sessions. */
const SMALL: PruningPolicy = {
  protectTokens: 100,
  minimumTokens: 50,
  protectedTools: ['skill'],
  protectUserTurns: 1,
  cacheAware: null,
  cacheHorizonTurns: 10,
};

/** Resolves once some backend of this database waits for a lock (another transaction's row). */
async function waitForLockWait(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const result = await t.db.execute<{ waiting: number }>(sql`
      select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`);
    if (result.rows[0]!.waiting > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no backend started waiting for a lock');
}

// ── Edge cases ────────────────────────────────────────────────────────────────────────────────

describe('selectPrunablePartsInSql: the walk', () => {
  it('protects the newest outputs and the last user turns, and prunes older ones above the minimum', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('a', 60), out('b', 70)),
      msg('user'),
      msg('assistant', out('c', 80), out('d', 30)),
      msg('user'),
      msg('assistant', out('tail', 500)),
    ]);
    const options = { coversThroughSeq: 6, pinSystemMessages: true, pruning: SMALL };
    const selection = await expectAgreement(session.pk, options);
    // Newest first: d 30, c 80 (110 > 100: candidate), b, a. The tail turn is protected.
    expect(callIds(selection)).toEqual(['a', 'b', 'c']);
    expect(selection).toMatchObject({ prunedTokens: 210, candidateTokens: 210, scannedTokens: 240 });
  });

  it('reports the candidates but selects nothing when they do not exceed the minimum', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('a', 50), out('b', 100)),
      msg('user'),
    ]);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 3,
      pinSystemMessages: true,
      pruning: SMALL,
    });
    expect(selection).toEqual({ parts: [], prunedTokens: 0, candidateTokens: 50, scannedTokens: 150 });
  });

  it('walks the message where the user-turn count reaches protectUserTurns, and nothing with fewer turns', async () => {
    const session = await createTestSession(t.db);
    // A user message carrying a tool output (legal, if unusual): it is the cutoff, and walked.
    await appendTestMessages(t.db, session.pk, [
      msg('assistant', out('old', 200)),
      msg('user', out('on-cutoff', 300)),
      msg('assistant', out('tail', 300)),
    ]);
    const pruning = { ...SMALL, protectTokens: 0, minimumTokens: 0 };
    const one = await expectAgreement(session.pk, { coversThroughSeq: 3, pinSystemMessages: true, pruning });
    expect(callIds(one)).toEqual(['old', 'on-cutoff']);
    const two = await expectAgreement(session.pk, {
      coversThroughSeq: 3,
      pinSystemMessages: true,
      pruning: { ...pruning, protectUserTurns: 2 },
    });
    expect(two).toEqual({ parts: [], prunedTokens: 0, candidateTokens: 0, scannedTokens: 0 });
    const none = await expectAgreement(session.pk, {
      coversThroughSeq: 3,
      pinSystemMessages: true,
      pruning: { ...pruning, protectUserTurns: 0 },
    });
    expect(callIds(none)).toEqual(['old', 'on-cutoff', 'tail']);
  });

  it('passes over errors, unfinished calls and protected tools, and walks parts newest first', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg(
        'assistant',
        out('older', 40),
        out('err', 900, { status: 'error' }),
        out('pending', 900, { status: 'pending' }),
        out('running', 900, { status: 'running' }),
        out('skill', 900, { tool: 'skill' }),
        out('newer', 120),
      ),
      msg('user'),
    ]);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 3,
      pinSystemMessages: true,
      pruning: { ...SMALL, minimumTokens: 0 },
    });
    expect(callIds(selection)).toEqual(['older', 'newer']);
    expect(selection.scannedTokens).toBe(160);
  });
});

describe('selectPrunablePartsInSql: where the walk stops', () => {
  it('stops at the newest pruned output it reaches: older outputs were handled by that prune', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('before', 500)),
      msg('assistant', out('pruned', 500)),
      msg('assistant', out('a', 200), out('b', 80)),
      msg('user'),
    ]);
    await markPruned(session.pk, ['pruned']);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 5,
      pinSystemMessages: true,
      pruning: SMALL,
    });
    expect(callIds(selection)).toEqual(['a']);
    expect(selection.scannedTokens).toBe(280);
  });

  it('does not stop at pruned outputs it never reaches: the protected tail, protected tools, errors', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('a', 300)),
      msg('assistant', out('skill', 300, { tool: 'skill' }), out('err', 300, { status: 'error' })),
      msg('assistant', out('b', 300)),
      msg('user'),
      // Emergency pruning cleared this one inside the protected tail.
      msg('assistant', out('tail', 5000)),
    ]);
    await markPruned(session.pk, ['skill', 'err', 'tail']);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 6,
      pinSystemMessages: true,
      pruning: SMALL,
    });
    expect(callIds(selection)).toEqual(['a', 'b']);
  });

  it('a pruned output of a tool that is no longer protected stops the walk', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('a', 300)),
      msg('assistant', out('skill', 300, { tool: 'skill' })),
      msg('assistant', out('b', 300)),
      msg('user'),
    ]);
    await markPruned(session.pk, ['skill']);
    const options = { coversThroughSeq: 5, pinSystemMessages: true };
    expect(callIds(await expectAgreement(session.pk, { ...options, pruning: SMALL }))).toEqual(['a', 'b']);
    const unprotected = { ...SMALL, protectTokens: 0, protectedTools: [] };
    expect(callIds(await expectAgreement(session.pk, { ...options, pruning: unprotected }))).toEqual(['b']);
  });
});

describe('selectPrunablePartsInSql: the view', () => {
  /** A pinned system message with an output, three turns, then a compaction that keeps the last two. */
  async function compactedSession(summaries: NewMessage[]) {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('system', out('pinned', 400)),
      msg('user'),
      msg('assistant', out('compacted', 400)),
      msg('user'),
      msg('assistant', out('kept', 400)),
      msg('user'),
    ]);
    await compact(session.pk, 4, summaries);
    return session;
  }
  const walkAll = { ...SMALL, protectTokens: 0, minimumTokens: 0, protectUserTurns: 0 };

  it('stops at the summary: its own outputs and the pinned messages before it are out of reach', async () => {
    // The summary is written after the covered range, so its seq (7) is inside the kept range.
    const session = await compactedSession([msg('assistant', out('in-summary', 400))]);
    await appendTestMessages(t.db, session.pk, [msg('assistant', out('after', 400))]);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 8,
      pinSystemMessages: true,
      pruning: walkAll,
    });
    expect(callIds(selection)).toEqual(['kept', 'after']);
  });

  it('with no summary message (a truncate cut), walks on into the pinned messages', async () => {
    const session = await compactedSession([]);
    const options = { coversThroughSeq: 6, pruning: walkAll };
    expect(callIds(await expectAgreement(session.pk, { ...options, pinSystemMessages: true }))).toEqual([
      'pinned',
      'kept',
    ]);
    expect(callIds(await expectAgreement(session.pk, { ...options, pinSystemMessages: false }))).toEqual([
      'kept',
    ]);
    // A pruned pinned output stops the walk like any other.
    await markPruned(session.pk, ['pinned']);
    expect(callIds(await expectAgreement(session.pk, { ...options, pinSystemMessages: true }))).toEqual([
      'kept',
    ]);
  });

  it("a summary message's pruned output is not walked, so it does not stop the walk", async () => {
    const session = await compactedSession([msg('assistant', out('in-summary', 400))]);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [out('hidden', 400)], { summary: true }),
      msg('assistant', out('after', 400)),
    ]);
    await markPruned(session.pk, ['in-summary', 'hidden']);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 9,
      pinSystemMessages: true,
      pruning: walkAll,
    });
    expect(callIds(selection)).toEqual(['kept', 'after']);
  });

  it('hides summary messages of other compactions, even inside the kept range', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('a', 400)),
      // A failed compaction's summary: flagged, in no completed compaction, so never shown.
      newMessage('assistant', [out('hidden', 400)], { summary: true }),
      msg('assistant', out('b', 400)),
    ]);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 4,
      pinSystemMessages: true,
      pruning: walkAll,
    });
    expect(callIds(selection)).toEqual(['a', 'b']);
  });

  it('walks only up to coversThroughSeq: later messages are neither pruned nor counted as turns', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('a', 400)),
      msg('user'),
      msg('assistant', out('b', 400)),
      msg('user'),
      msg('assistant', out('c', 400)),
    ]);
    const pruning = { ...SMALL, protectTokens: 0, minimumTokens: 0 };
    expect(
      callIds(await expectAgreement(session.pk, { coversThroughSeq: 4, pinSystemMessages: true, pruning })),
    ).toEqual(['a']);
    expect(
      callIds(await expectAgreement(session.pk, { coversThroughSeq: 6, pinSystemMessages: true, pruning })),
    ).toEqual(['a', 'b']);
  });

  it('selects nothing in an empty session', async () => {
    const session = await createTestSession(t.db);
    expect(
      await expectAgreement(session.pk, { coversThroughSeq: 0, pinSystemMessages: true, pruning: SMALL }),
    ).toEqual({ parts: [], prunedTokens: 0, candidateTokens: 0, scannedTokens: 0 });
  });
});

describe('pruneToolOutputs', () => {
  async function prunableSession() {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      msg('user'),
      msg('assistant', out('a', 300), out('b', 200)),
      msg('user'),
      msg('assistant', out('c', 100)),
      msg('user'),
    ]);
    return session;
  }
  const options = { coversThroughSeq: 5, pinSystemMessages: true, pruning: { ...SMALL, protectTokens: 0 } };
  /** Tokens of the marker that replaces a pruned output (its call id is one letter). */
  const MARKER = prunedOutputMarkerTokens('a');

  it('marks the selection in part_prunes, and a repeat marks nothing', async () => {
    const session = await prunableSession();
    const at = new Date('2026-03-04T05:06:07.000Z');
    expect(await pruneToolOutputs(t.db, session.pk, { ...options, at, by: 'prune_1' })).toEqual({
      parts: 3,
      tokens: 600,
      candidateTokens: 600,
      markedSeqs: { first: 2, last: 4 },
      savedTokens: 600 - 3 * MARKER,
    });
    expect(await markedBy(session.pk, 'prune_1')).toEqual(['a', 'b', 'c']);
    const rows = await t.db.execute<{ compacted_at: Date }>(
      sql`select compacted_at from part_prunes where session_pk = ${session.pk}`,
    );
    expect(rows.rows.map((r) => new Date(r.compacted_at).toISOString())).toEqual(
      Array(3).fill(at.toISOString()),
    );
    // The view now stops at the newest mark: nothing more to do.
    expect(await pruneToolOutputs(t.db, session.pk, { ...options, at, by: 'prune_2' })).toEqual({
      parts: 0,
      tokens: 0,
      candidateTokens: 0,
      markedSeqs: null,
      savedTokens: 0,
    });
    expect(await markedBy(session.pk, 'prune_2')).toEqual([]);
  });

  it('writes nothing when the candidates do not exceed the minimum, and says how much they were', async () => {
    const session = await prunableSession();
    const result = await pruneToolOutputs(t.db, session.pk, {
      ...options,
      pruning: { ...options.pruning, minimumTokens: 600 },
      at: new Date(),
      by: 'prune_1',
    });
    expect(result).toEqual({ parts: 0, tokens: 0, candidateTokens: 600, markedSeqs: null, savedTokens: 0 });
    expect(await markedBy(session.pk, 'prune_1')).toEqual([]);
  });

  it('counts only its own marks when another prune marked some of them first', async () => {
    const session = await prunableSession();
    await markPruned(session.pk, ['a']);
    // Seen before `a` was marked, the selection would be a, b, c; now the walk stops at a.
    expect(await pruneToolOutputs(t.db, session.pk, { ...options, at: new Date(), by: 'p' })).toEqual({
      parts: 2,
      tokens: 300,
      candidateTokens: 300,
      markedSeqs: { first: 2, last: 4 },
      savedTokens: 300 - 2 * MARKER,
    });
  });

  it('collides with a mark a concurrent prune inserted after its snapshot, and re-runs on the new state', async () => {
    const session = await prunableSession();
    const other = await t.database.pool.connect();
    try {
      await other.query('begin');
      await other.query(
        `insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
         select session_pk, seq, idx, now(), 'other' from parts where session_pk = $1 and call_id = 'b'`,
        [session.pk],
      );
      // Its snapshot does not see b's mark: it selects a, b and c, then waits on b's key.
      const pruning = pruneToolOutputs(t.db, session.pk, { ...options, at: new Date(), by: 'p' });
      await waitForLockWait();
      await other.query('commit');
      // The collision rolls its marks back; the re-run sees b's mark and stops there, as core
      // would on the new state: only c, newer than b, is left to prune.
      expect(await pruning).toEqual({
        parts: 1,
        tokens: 100,
        candidateTokens: 100,
        markedSeqs: { first: 4, last: 4 },
        savedTokens: 100 - MARKER,
      });
      expect(await markedBy(session.pk, 'p')).toEqual(['c']);
      expect(await markedBy(session.pk, 'other')).toEqual(['b']);
    } finally {
      other.release();
    }
  });

  it('two concurrent prunes of one session mark each output once and count it once', async () => {
    const session = await prunableSession();
    const results = await Promise.all(
      ['p1', 'p2'].map((by) => pruneToolOutputs(t.db, session.pk, { ...options, at: new Date(), by })),
    );
    expect(results.reduce((sum, r) => sum + r.parts, 0)).toBe(3);
    expect(results.reduce((sum, r) => sum + r.tokens, 0)).toBe(600);
    expect([...(await markedBy(session.pk, 'p1')), ...(await markedBy(session.pk, 'p2'))].sort()).toEqual([
      'a',
      'b',
      'c',
    ]);
  });
});
