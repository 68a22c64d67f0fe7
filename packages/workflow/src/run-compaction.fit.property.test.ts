import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  POLICY_PRESET_NAMES,
  resolvePolicy,
  toOpenAIMessages,
  usableTokens,
  usageCalibrationCap,
  validateContext,
  type CompactionReason,
  type PolicyPreset,
} from '@compactor/core';
import {
  contextTokenStats,
  estimateFromStats,
  findSessionByPk,
  sessionModel,
  type MessageInput,
} from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();

/** The windows the guarantee is stated for: local models to the largest hosted ones. */
const WINDOWS = [4096, 8192, 16_384, 32_768, 128_000, 1_000_000] as const;

/** A session shape: a generated coding session plus what breaks naive compaction at the edges. */
const shapeArb = fc.record({
  window: fc.constantFrom(...WINDOWS),
  preset: fc.constantFrom<PolicyPreset>(...POLICY_PRESET_NAMES),
  reason: fc.constantFrom<CompactionReason>('auto', 'manual', 'overflow'),
  turns: fc.integer({ min: 0, max: 4 }),
  fileLines: fc.constantFrom(20, 120),
  seed: fc.integer({ min: 1, max: 1_000 }),
  /** A system prompt of this share of the window (pinned, never compacted). */
  systemShare: fc.constantFrom(0, 0.01, 0.3),
  /** The newest turn reads an output of this many windows (0: none). */
  giantOutput: fc.constantFrom(0, 0, 0.6, 1.5),
  /** The user pastes a text of this many windows (0: none). */
  giantUser: fc.constantFrom(0, 0, 1.2),
  /** The newest turn has a call still running. */
  running: fc.boolean(),
  /** A second round: more messages, then an emergency compaction. */
  secondRound: fc.boolean(),
});
type Shape = typeof shapeArb extends fc.Arbitrary<infer T> ? T : never;

/** About four characters per token of this text. */
const text = (tokens: number, line: string) => line.repeat(Math.ceil((tokens * 4) / line.length));

function messagesOf(shape: Shape, round: number): MessageInput[] {
  const messages: MessageInput[] = [];
  if (round === 0 && shape.systemShare > 0)
    messages.push({
      role: 'system',
      parts: [
        { type: 'text', text: text(shape.window * shape.systemShare, 'Follow the repository rules. ') },
      ],
    });
  if (round === 0)
    messages.push(
      ...generateCodingSession({ turns: shape.turns, fileLines: shape.fileLines, seed: shape.seed }),
    );
  if (shape.giantUser > 0)
    messages.push({
      role: 'user',
      parts: [{ type: 'text', text: text(shape.window * shape.giantUser, 'pasted log line 42 ') }],
    });
  else
    messages.push({
      role: 'user',
      parts: [{ type: 'text', text: `Round ${round}: read the log and fix it.` }],
    });
  const parts: MessageInput['parts'] = [];
  if (shape.giantOutput > 0)
    parts.push({
      type: 'tool',
      callId: `log-${round}`,
      tool: 'bash',
      status: 'completed',
      input: { command: 'cat app.log' },
      output: text(shape.window * shape.giantOutput, 'GET /api/v1/invoices 200 12ms\n'),
    });
  if (shape.running)
    parts.push({
      type: 'tool',
      callId: `run-${round}`,
      tool: 'bash',
      status: 'running',
      input: { command: 'npm test' },
    });
  if (parts.length > 0) messages.push({ role: 'assistant', finish: 'tool-calls', parts });
  return messages;
}

/**
 * After a compaction: a completed one leaves the context within the usable input and valid;
 * none leaves a session over its window without a reason it states.
 */
async function expectFits(sessionPk: number, shape: Shape, status: string, errorCode: string | null) {
  const session = (await findSessionByPk(w.resources.db, sessionPk))!;
  const policy = resolvePolicy({ preset: shape.preset });
  const usable = usableTokens(sessionModel(session), policy)!;
  const calibrationCap = usageCalibrationCap(usable);
  const stats = await contextTokenStats(w.resources.db, sessionPk);
  const tokens = estimateFromStats(stats, { mode: policy.estimate, calibrationCap });
  const context = await w.context(sessionPk);
  expect(validateContext(toOpenAIMessages(context))).toEqual([]);
  if (status === 'completed') expect(tokens).toBeLessThanOrEqual(usable);
  else if (status === 'failed') expect(errorCode).toBe('context_cannot_fit');
  // Skipped: nothing to compact, which is only fine when the context already fits.
  else expect(tokens).toBeLessThanOrEqual(usable);
}

describe('the fit guarantee over generated sessions × windows × presets', () => {
  it('after every compaction the context fits and is valid', async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, async (shape) => {
        const session = await w.seedSession(messagesOf(shape, 0), {
          policy: { preset: shape.preset },
          contextWindow: shape.window,
        });
        for (let round = 0; round < (shape.secondRound ? 2 : 1); round++) {
          if (round > 0) await w.append(session, messagesOf(shape, round));
          const reason = round === 0 ? shape.reason : 'overflow';
          const { compaction } = await requestCompaction(w.resources.db, session, { reason });
          const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
          await expectFits(session.pk, shape, result.status, result.compaction?.errorCode ?? null);
        }
      }),
      { numRuns: 60 },
    );
  }, 240_000);
});
