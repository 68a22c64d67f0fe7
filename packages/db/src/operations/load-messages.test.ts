import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  assembleContext,
  CONTINUATION_METADATA_TYPE,
  estimateContextTokens,
  isContinuationMessage,
  type Message,
} from '@compactor/core';
import {
  findLatestCompletedCompaction,
  insertCompaction,
  listCompactions,
  updateCompaction,
} from '../queries/compactions';
import { boundaryFromRow } from '../mappers';
import { contextTokenStats, estimateFromStats } from '../queries/context-tokens';
import { markPartsCompacted } from '../queries/parts';
import { appendTestMessages } from '../test-support/append-test-messages';
import { completeCompaction } from './complete-compaction';
import { loadContextRows, loadHistoryPage, type ContextRows } from './load-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';

/** The hybrid formula's inputs without the calibration cap (core's tests table the cap). */
const UNCAPPED = { calibrationCap: Number.MAX_SAFE_INTEGER };

const t = useTestDatabase();

/** Six messages: u1 a1(tool) u2 a2 u3 a3, 10 tokens per text part. */
async function sessionWithHistory() {
  const session = await createTestSession(t.db);
  await appendTestMessages(t.db, session.pk, [
    newMessage('user', [text('u1', 10)], { id: 'u1' }),
    newMessage('assistant', [text('a1', 10), tool('call_1', 'x'.repeat(400))], { id: 'a1' }),
    newMessage('user', [text('u2', 10)], { id: 'u2' }),
    newMessage('assistant', [text('a2', 10)], {
      id: 'a2',
      usage: { input: 500, output: 20, reasoning: 0, cacheRead: 100, cacheWrite: 0 },
    }),
    newMessage('user', [text('u3', 10)], { id: 'u3' }),
    newMessage('assistant', [text('a3', 10)], { id: 'a3' }),
  ]);
  return session;
}

const ids = (messages: { id: string }[]) => messages.map((m) => m.id);

/** Core's view over the whole stored history (the reference the SQL filter must match), in seq order. */
async function referenceViewIds(sessionPk: number): Promise<string[]> {
  const history = await loadHistoryPage(t.db, sessionPk, { afterSeq: 0, limit: 10_000 });
  const compactions = (await listCompactions(t.db, sessionPk, { limit: 100 })).map(boundaryFromRow);
  const view = assembleContext(history.messages, compactions).messages;
  return ids([...view].sort((a, b) => a.seq - b.seq));
}

/** A message as the context view loads it: a pruned output's text is not read. */
function withoutPrunedText(message: Message): Message {
  return {
    ...message,
    parts: message.parts.map((p) =>
      p.type === 'tool' && p.compactedAt !== null ? { ...p, output: null } : p,
    ),
  };
}

/**
 * The one statement's rows equal what separate reads return: each message and its parts as the
 * raw history stores them (a pruned output's text unread), and the latest completed compaction.
 */
async function expectStoredRows(sessionPk: number, rows: ContextRows) {
  const history = await loadHistoryPage(t.db, sessionPk, { afterSeq: 0, limit: 10_000 });
  const stored = new Map(history.messages.map((m) => [m.id, m]));
  expect(rows.messages).toEqual(rows.messages.map((m) => withoutPrunedText(stored.get(m.id)!)));
  const latest = await findLatestCompletedCompaction(t.db, sessionPk);
  expect(rows.compaction).toEqual(latest && boundaryFromRow(latest));
}

/** A completed compaction with neither a boundary nor a summary (rows of an older writer). */
async function withoutBoundaryOrSummary(compactionId: string) {
  await updateCompaction(t.db, compactionId, { boundarySeq: null, summaryMessageIds: [] });
}

/** Inserts a compaction and completes it with one assistant summary message of `summaryTokens`. */
async function compactWithSummary(
  sessionPk: number,
  options: { boundarySeq: number; summaryId: string; summaryTokens: number; finishedAt?: Date },
) {
  const row = await insertCompaction(t.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk,
    reason: 'auto',
    strategy: 'summarize',
  });
  return completeCompaction(t.db, {
    compactionId: row!.id,
    sessionPk,
    summaryMessages: [
      newMessage('assistant', [text(`summary ${options.summaryId}`, options.summaryTokens)], {
        id: options.summaryId,
      }),
    ],
    boundarySeq: options.boundarySeq,
    tokensBefore: 0,
    messagesBefore: 0,
    finishedAt: options.finishedAt ?? new Date(),
  });
}

describe('loadContextRows (the context view filter)', () => {
  it('returns every message when the session has no compaction', async () => {
    const session = await sessionWithHistory();
    const context = await loadContextRows(t.db, session.pk);
    expect(ids(context.messages)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3']);
    expect(context.compaction).toBeNull();
  });

  it.each(['pending', 'running', 'failed', 'skipped'] as const)('ignores a %s compaction', async (status) => {
    const session = await sessionWithHistory();
    await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
      status,
      boundarySeq: 5,
    });
    const context = await loadContextRows(t.db, session.pk);
    expect(ids(context.messages)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3']);
    expect(context.compaction).toBeNull();
  });

  it('after a completed compaction: its summary messages, then messages from the boundary on, then later appends', async () => {
    const session = await sessionWithHistory();
    const compaction = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
      status: 'running',
      coversThroughSeq: 6,
    });
    // Appended while the compaction runs: must land after the boundary, never lost.
    await appendTestMessages(t.db, session.pk, [newMessage('user', [text('u4', 10)], { id: 'u4' })]);
    const completed = await completeCompaction(t.db, {
      compactionId: compaction!.id,
      sessionPk: session.pk,
      summaryMessages: [
        newMessage('user', [{ type: 'compaction', auto: false, tokens: 5 }], { id: 'c-request' }),
        newMessage('assistant', [text('summary of u1..a2', 30)], { id: 'c-summary', finish: 'stop' }),
      ],
      boundarySeq: 5,
      tokensBefore: 1000,
      messagesBefore: 6,
      finishedAt: new Date(),
    });

    // The after-size is the new view's: marker 5 + summary 30 + u3, a3, u4 at 10 each.
    expect(completed).toMatchObject({
      tokensAfter: 65,
      messagesAfter: 5,
      tokensBefore: 1000,
      messagesBefore: 6,
    });
    const context = await loadContextRows(t.db, session.pk);
    expect(context.compaction).toMatchObject({
      id: compaction!.id,
      status: 'completed',
      boundarySeq: 5,
      summaryMessageIds: ['c-request', 'c-summary'],
    });
    // Filtered in SQL; ordered by seq here (summary messages were written last). Core puts the summary first.
    expect(ids(context.messages).sort()).toEqual(['a3', 'c-request', 'c-summary', 'u3', 'u4'].sort());
    expect(context.messages.find((m) => m.id === 'c-summary')).toMatchObject({
      summary: true,
      compactionId: compaction!.id,
    });
  });

  it('without pinning, reads no system message from before the boundary; an empty view still names its compaction', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('system', [text('rules', 10)], { id: 's1' }),
      newMessage('user', [text('u1', 10)], { id: 'u1' }),
      newMessage('assistant', [text('a1', 10), tool('call_1', 'out')], { id: 'a1' }),
    ]);
    const compaction = await compactWithSummary(session.pk, {
      boundarySeq: 3,
      summaryId: 'sum',
      summaryTokens: 5,
    });
    const pinned = await loadContextRows(t.db, session.pk);
    expect(ids(pinned.messages)).toEqual(['s1', 'a1', 'sum']);
    const unpinned = await loadContextRows(t.db, session.pk, { pinSystemMessages: false });
    expect(ids(unpinned.messages)).toEqual(['a1', 'sum']);
    await expectStoredRows(session.pk, unpinned);

    // A truncation that wrote no summary and kept nothing: no message, but the compaction is named.
    await updateCompaction(t.db, compaction.id, { boundarySeq: 100, summaryMessageIds: [] });
    const empty = await loadContextRows(t.db, session.pk, { pinSystemMessages: false });
    expect(empty.messages).toEqual([]);
    expect(empty.compaction).toMatchObject({ id: compaction.id, boundarySeq: 100, summaryMessageIds: [] });
  });

  it('takes the compaction the caller holds instead of reading it', async () => {
    const session = await sessionWithHistory();
    const compaction = await compactWithSummary(session.pk, {
      boundarySeq: 3,
      summaryId: 'sum',
      summaryTokens: 5,
    });
    const held = await loadContextRows(t.db, session.pk, {
      latestCompleted: { ...compaction, id: 'cmp_held' },
    });
    expect(held.compaction?.id).toBe('cmp_held');
    expect(ids(held.messages)).toEqual(ids((await loadContextRows(t.db, session.pk)).messages));
    expect((await loadContextRows(t.db, session.pk, { latestCompleted: null })).compaction).toBeNull();
  });

  it('a second completed compaction replaces the first: the older summary is hidden', async () => {
    const session = await sessionWithHistory();
    const done = [];
    for (const [n, boundarySeq] of [
      [1, 3],
      [2, 5],
    ] as const) {
      done.push(
        await compactWithSummary(session.pk, {
          boundarySeq,
          summaryId: `s${n}`,
          summaryTokens: 30,
          finishedAt: new Date(Date.now() + n),
        }),
      );
    }
    const context = await loadContextRows(t.db, session.pk);
    expect(ids(context.messages)).toEqual(['u3', 'a3', 's2']);
    expect(context.compaction).toEqual(boundaryFromRow(done[1]!));
    await expectStoredRows(session.pk, context);
  });
});

describe('contextTokenStats (hybrid estimate inputs)', () => {
  it('says the newest message is a summary for the continuation message sent after a compaction, as core does', async () => {
    const session = await sessionWithHistory();
    const continueWith = { type: CONTINUATION_METADATA_TYPE };
    const cases: Array<[string, Parameters<typeof newMessage>[2], 'user' | 'assistant', boolean]> = [
      ['a plain user message', {}, 'user', false],
      ['the continuation', { metadata: continueWith }, 'user', true],
      ['an assistant message with that metadata', { metadata: continueWith }, 'assistant', false],
    ];
    for (const [label, extra, role, expected] of cases) {
      const [appended] = await appendTestMessages(t.db, session.pk, [
        newMessage(role, [text('go on')], extra),
      ]);
      const stats = await contextTokenStats(t.db, session.pk);
      expect(stats.newestSeq, label).toBe(appended!.seq);
      expect(stats.newestIsSummary, label).toBe(expected);
      const rows = await loadContextRows(t.db, session.pk);
      expect(isContinuationMessage(rows.messages.at(-1)!), `core on ${label}`).toBe(expected);
    }
  });

  it('uses the newest usage report as the base and adds stored counts after it', async () => {
    const session = await sessionWithHistory();
    const stats = await contextTokenStats(t.db, session.pk);
    // Parts: 6 texts × 10 + tool (5 + 100 output) = 165.
    expect(stats.storedTokens).toBe(165);
    expect(stats.summaryTokens).toBe(0);
    expect(stats.contextMessages).toBe(6);
    expect(stats.report).toEqual({
      seq: 4,
      finish: null,
      usage: { input: 500, output: 20, reasoning: 0, cacheRead: 100, cacheWrite: 0 },
      toolResultTokens: 0,
      tokensAfter: 20, // u3 + a3
      prunedSince: 0,
      createdAt: expect.any(Date),
    });
    expect(estimateFromStats(stats, UNCAPPED)).toBe(500 + 100 + 20 + 20);
    // A report adds at most the cap over the stored count, and exact mode ignores it.
    expect(estimateFromStats(stats, { calibrationCap: 100 })).toBe(165 + 100);
    expect(estimateFromStats(stats, { ...UNCAPPED, mode: 'exact' })).toBe(165);
    expect(stats.messagesSinceCompaction).toBe(6);
    expect(stats).toMatchObject({ newestSeq: 6, newestIsSummary: false });
  });

  it('counts a pruned output as its marker, and the output stays stored', async () => {
    const session = await sessionWithHistory();
    const marked = await markPartsCompacted(t.db, session.pk, [{ seq: 2, callId: 'call_1' }], {
      at: new Date(),
      by: 'prune_1',
    });
    expect(marked).toEqual({ parts: 1, tokens: 100, markedSeqs: { first: 2, last: 2 } });
    // Repeating the prune changes nothing.
    expect(
      await markPartsCompacted(t.db, session.pk, [{ seq: 2, callId: 'call_1' }], {
        at: new Date(),
        by: 'prune_2',
      }),
    ).toEqual({ parts: 0, tokens: 0, markedSeqs: null });
    const stats = await contextTokenStats(t.db, session.pk);
    // The marker of call_1: (43 fixed characters + 6 bytes + 3) / 4 = 13 tokens.
    expect(stats.storedTokens).toBe(165 - 100 + 13);
    // Pruned after the report (seq 4, created long before): the report's count shrinks too.
    expect(stats.report?.prunedSince).toBe(100 - 13);
    // The context view does not read the pruned text (the model sees the marker) ...
    const context = await loadContextRows(t.db, session.pk);
    const part = context.messages[1]?.parts[1];
    expect(part).toMatchObject({ type: 'tool', output: null });
    expect(part && 'compactedAt' in part && part.compactedAt).toBeTruthy();
    // ... and the raw history still returns it (lazy deletion).
    const history = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 });
    const stored = history.messages.find((m) => m.seq === 2)?.parts[1];
    expect(stored).toMatchObject({ type: 'tool', output: 'x'.repeat(400) });
    expect(stored && 'compactedAt' in stored && stored.compactedAt).toBeTruthy();
  });

  it('ignores usage reported before the latest compaction', async () => {
    const session = await sessionWithHistory();
    await compactWithSummary(session.pk, { boundarySeq: 5, summaryId: 'sum', summaryTokens: 30 });
    const stats = await contextTokenStats(t.db, session.pk);
    expect(stats.report).toBeNull();
    expect(stats.storedTokens).toBe(30 + 10 + 10); // summary + u3 + a3
    expect(stats.summaryTokens).toBe(30);
    expect(stats).toMatchObject({ messagesSinceCompaction: 0, newestSeq: 7, newestIsSummary: true });

    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('u4', 10)], { id: 'u4' }),
      newMessage('assistant', [text('a4', 10)], {
        id: 'a4',
        usage: { input: 70, output: 10, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
      }),
      newMessage('user', [text('u5', 10)], { id: 'u5' }),
    ]);
    const after = await contextTokenStats(t.db, session.pk);
    expect(after.report?.seq).toBe(9);
    expect(after.report?.tokensAfter).toBe(10);
    expect(after.messagesSinceCompaction).toBe(3);
    expect(estimateFromStats(after, UNCAPPED)).toBe(70 + 10 + 10);
  });

  it('matches core estimateContextTokens on random sessions', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            role: fc.constantFrom('user', 'assistant', 'assistant', 'system'),
            tokens: fc.nat(50),
            usage: fc.option(
              fc.record({
                input: fc.nat(5000),
                output: fc.nat(300),
                reasoning: fc.nat(200),
                cacheRead: fc.nat(2000),
                cacheWrite: fc.nat(500),
              }),
            ),
            // Text after the tool calls: a second step in one message (its own usage report).
            // Blank by JavaScript's trim (core) whatever the server's locale says: no-break and
            // ideographic spaces, a BOM; and text that is not blank outside ASCII.
            closingText: fc.constantFrom('', '   ', '\u00a0', '\u3000\ufeff\u2003', 'and then', 'é', '🙂'),
            failed: fc.constantFrom(false, false, false, true),
            tools: fc.array(
              fc.record({ status: fc.constantFrom('completed', 'error', 'running'), size: fc.nat(800) }),
              {
                maxLength: 3,
              },
            ),
            prune: fc.boolean(),
            // Call ids outside ASCII and up to the 200-character limit: a pruned output's marker
            // names its call, and SQL must count it as core does (bytes, not characters).
            callIdPrefix: fc.constantFrom('', 'c', 'é', '日本', '😀', 'x'.repeat(190), '😀'.repeat(95)),
          }),
          { minLength: 1, maxLength: 10 },
        ),
        fc.option(fc.nat(12)),
        fc.constantFrom('boundary', 'boundary', 'neither'),
        async (shape, compactAt, compactionShape) => {
          const session = await createTestSession(t.db);
          await appendTestMessages(
            t.db,
            session.pk,
            shape.map((m, i) =>
              newMessage(
                m.role,
                [
                  text(`m${i}`, m.tokens),
                  ...(m.role === 'assistant'
                    ? m.tools.map((tl, j) =>
                        tl.status === 'completed'
                          ? tool(`${m.callIdPrefix}${i}_${j}`, 'y'.repeat(tl.size))
                          : tool(`${m.callIdPrefix}${i}_${j}`, null, {
                              status: tl.status,
                              // Astral characters: two UTF-16 units each, as core counts length.
                              error:
                                tl.status === 'error' ? '😀'.repeat(tl.size % 7) + 'e'.repeat(tl.size) : null,
                            }),
                      )
                    : []),
                  ...(m.role === 'assistant' && m.closingText !== '' ? [text(m.closingText, 3)] : []),
                ],
                {
                  id: `m${i}`,
                  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
                  ...(m.role === 'assistant' && m.usage ? { usage: m.usage } : {}),
                  ...(m.failed && m.role === 'assistant' ? { error: { message: 'provider failed' } } : {}),
                },
              ),
            ),
          );
          const prunable = shape.flatMap((m, i) =>
            m.role === 'assistant' && m.prune
              ? m.tools.flatMap((tl, j) =>
                  tl.status === 'completed' ? [{ seq: i + 1, callId: `${m.callIdPrefix}${i}_${j}` }] : [],
                )
              : [],
          );
          await markPartsCompacted(t.db, session.pk, prunable, {
            at: new Date(Date.UTC(2026, 0, 1, 0, 0, 5)),
            by: 'p',
          });
          if (compactAt !== null) {
            const done = await compactWithSummary(session.pk, {
              boundarySeq: compactAt,
              summaryId: 'sum',
              summaryTokens: 25,
            });
            // Neither a boundary nor a summary: core keeps only the pinned messages.
            if (compactionShape === 'neither') await withoutBoundaryOrSummary(done.id);
          }
          const rows = await loadContextRows(t.db, session.pk);
          expect(ids(rows.messages)).toEqual(await referenceViewIds(session.pk));
          await expectStoredRows(session.pk, rows);
          // The stored view (summary first), which core's estimate is defined on.
          const view = [
            ...rows.messages.filter((m) => m.summary),
            ...rows.messages.filter((m) => !m.summary),
          ];
          const stats = await contextTokenStats(t.db, session.pk);
          // Caps that bind on most reports, on some, and never: the floor and the cap alike.
          for (const calibrationCap of [0, 100, 1000, Number.MAX_SAFE_INTEGER])
            for (const mode of ['hybrid', 'exact'] as const) {
              const options = { mode, calibrationCap };
              expect(estimateFromStats(stats, options)).toBe(estimateContextTokens(view, options).tokens);
            }
          // What the context endpoint reports as tokens is the stored sum.
          const rendered = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : []);
          expect(rendered.tokens).toBe(stats.storedTokens);
        },
      ),
      { numRuns: 80 },
    );
  });
});

describe('the one-active-compaction rule', () => {
  it('is enforced by the database: a second pending compaction is not inserted', async () => {
    const session = await createTestSession(t.db);
    const first = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
    });
    const second = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    expect(first).not.toBeNull();
    expect(second).toBeNull();
    await updateCompaction(t.db, first!.id, { status: 'failed', finishedAt: new Date() });
    const third = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: session.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    expect(third).not.toBeNull();
  });
});
