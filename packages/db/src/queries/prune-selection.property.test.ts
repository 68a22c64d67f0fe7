/**
 * The prune selection in SQL against core's `selectPrunableParts` on random sessions: appends,
 * compactions with summaries, earlier marks, orphan summaries, pinned system messages, policies.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, pruneCouldSelect, type Role, type ToolPart, type ToolStatus } from '@compactor/core';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text } from '../test-support/fixtures';
import { pruneSelectionFixtures } from '../test-support/prune-selection';
import { contextTokenStats } from './context-tokens';
import { pruneToolOutputs } from './prune-selection';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();
const { out, msg, markPruned, compact, lastSeq, coveredView, expectAgreement, callIds, markedBy } =
  pruneSelectionFixtures(t);

// ── Property: the SQL is core ─────────────────────────────────────────────────────────────────

const toolSpec = fc.record({
  tool: fc.constantFrom('read', 'bash', 'grep', 'skill'),
  status: fc.constantFrom<ToolStatus>('completed', 'completed', 'completed', 'error', 'pending', 'running'),
  // Round sizes too, so running sums land exactly on the protection and the minimum.
  tokens: fc.oneof(fc.constantFrom(0, 50, 100, 150), fc.nat(300)),
  pruned: fc.nat(4).map((n) => n === 0),
});
const messageSpec = fc.record({
  role: fc.constantFrom<Role>('user', 'user', 'assistant', 'assistant', 'assistant', 'system'),
  tools: fc.array(toolSpec, { maxLength: 3 }),
  /** A summary-flagged message in no completed compaction (a failed one's): hidden from the view. */
  orphanSummary: fc.nat(9).map((n) => n === 0),
});
const compactionSpec = fc.record({
  /** How far before the next seq the boundary lies (0: nothing of the history is kept). */
  keep: fc.nat(6),
  summaries: fc.array(
    fc.record({
      role: fc.constantFrom<Role>('assistant', 'user', 'system'),
      tools: fc.array(toolSpec, { maxLength: 3 }),
    }),
    { maxLength: 2 },
  ),
});
/** Appends, each optionally followed by a compaction: later appends land after its summary. */
const sessionSpec = fc.array(
  fc.record({ messages: fc.array(messageSpec, { maxLength: 8 }), compaction: fc.option(compactionSpec) }),
  { minLength: 1, maxLength: 3 },
);
const optionsSpec = fc.record({
  pinSystemMessages: fc.boolean(),
  /** A compaction's covered range ends this far before the last seq; null: a prune job (the last seq). */
  coversBack: fc.option(fc.nat(5)),
  pruning: fc.record({
    protectTokens: fc.constantFrom(0, 100, 400),
    minimumTokens: fc.constantFrom(0, 50, 300),
    protectedTools: fc.constantFrom<string[]>([], ['skill'], ['skill', 'grep']),
    protectUserTurns: fc.nat(3),
    cacheAware: fc.constant(null),
    cacheHorizonTurns: fc.constant(10),
  }),
});

type ToolSpec = typeof toolSpec extends fc.Arbitrary<infer T> ? T : never;
type SessionSpec = typeof sessionSpec extends fc.Arbitrary<infer T> ? T : never;

/** Seeds a session from the spec; returns it once every output the spec prunes is marked. */
async function seed(spec: SessionSpec) {
  const session = await createTestSession(t.db);
  let calls = 0;
  const pruned: string[] = [];
  const parts = (tools: ToolSpec[]) =>
    tools.map((tl) => {
      const id = `call_${calls++}`;
      if (tl.pruned) pruned.push(id);
      return out(id, tl.tokens, tl);
    });
  for (const step of spec) {
    await appendTestMessages(
      t.db,
      session.pk,
      step.messages.map((m) =>
        newMessage(m.role, [text(m.role, 3), ...parts(m.tools)], { summary: m.orphanSummary }),
      ),
    );
    if (step.compaction) {
      const next = (await lastSeq(session.pk)) + 1;
      const summaries = step.compaction.summaries.map((s) =>
        newMessage(s.role, [text('summary', 20), ...parts(s.tools)]),
      );
      await compact(session.pk, Math.max(1, next - step.compaction.keep), summaries);
    }
  }
  await markPruned(session.pk, pruned);
  return session;
}

describe('selectPrunablePartsInSql and pruneToolOutputs agree with core selectPrunableParts', () => {
  it('on random sessions, compactions, marks and policies', async () => {
    await fc.assert(
      fc.asyncProperty(sessionSpec, optionsSpec, async (spec, { coversBack, ...rest }) => {
        const session = await seed(spec);
        const last = await lastSeq(session.pk);
        const options = { ...rest, coversThroughSeq: Math.max(0, last - (coversBack ?? 0)) };
        const expected = await expectAgreement(session.pk, options);
        if (coversBack === null) {
          // A prune job's view is the status's: its stats say whether queueing the job is worth it.
          const stats = await contextTokenStats(t.db, session.pk, {
            pinSystemMessages: rest.pinSystemMessages,
          });
          const outputs = (await coveredView(session.pk, options))
            .flatMap((message) => message.parts)
            .filter((part): part is ToolPart => part.type === 'tool' && part.status === 'completed')
            .filter((part) => part.compactedAt === null)
            .map((part) => part.outputTokens);
          expect(stats.unprunedOutputs).toEqual({
            total: outputs.reduce((sum, tokens) => sum + tokens, 0),
            largest: Math.max(0, ...outputs),
          });
          if (expected.parts.length > 0)
            expect(
              pruneCouldSelect({ pruning: rest.pruning, tokenCount: 'tokenizer' }, stats.unprunedOutputs),
            ).toBe(true);
        }

        const by = `prune_${randomUUID()}`;
        const served = async () =>
          (await contextTokenStats(t.db, session.pk, { pinSystemMessages: rest.pinSystemMessages }))
            .storedTokens;
        const servedBefore = await served();
        const { savedTokens, ...result } = await pruneToolOutputs(t.db, session.pk, {
          ...options,
          at: new Date(),
          by,
        });
        // What the statement says its marks saved is what the view serves less.
        expect(savedTokens).toBe(servedBefore - (await served()));
        expect(result).toEqual({
          parts: expected.parts.length,
          tokens: expected.prunedTokens,
          candidateTokens: expected.candidateTokens,
          markedSeqs:
            expected.parts.length === 0
              ? null
              : { first: expected.parts[0]!.seq, last: expected.parts.at(-1)!.seq },
        });
        expect(await markedBy(session.pk, by)).toEqual(callIds(expected));
        // And again over the view the marks changed (it now stops at the newest of them).
        await expectAgreement(session.pk, options);
      }),
      { numRuns: 150 },
    );
  });
});

// Keeps DEFAULT_POLICY's budgets honest here too: the OpenCode numbers on a real-sized output.
describe('with the default (OpenCode) budgets', () => {
  it('prunes outputs older than the newest 40,000 tokens once they exceed 20,000', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      ...Array.from({ length: 8 }, (_, i) => [msg('user'), msg('assistant', out(`old${i}`, 10_000))]).flat(),
      msg('user'),
      msg('user'),
    ]);
    const selection = await expectAgreement(session.pk, {
      coversThroughSeq: 18,
      pinSystemMessages: true,
      pruning: DEFAULT_POLICY.pruning,
    });
    expect(callIds(selection)).toEqual(['old0', 'old1', 'old2', 'old3']);
  });
});
