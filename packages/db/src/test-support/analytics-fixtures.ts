import type { Db } from '../client';
import { appendTestMessages } from './append-test-messages';
import { insertCompaction, type NewCompactionRow } from '../queries/compactions';
import { insertCompactionStep } from '../queries/compaction-lifecycle';
import { createTestSession, newMessage, text, tool } from './fixtures';

/** Planted in message text, instructions, drafts and undocumented details: no view may show it. */
export const SECRET = 'SECRET-PAYLOAD-7f3a';

const DAY_MS = 86_400_000;

/** UTC midnights the seed uses: 30 days ago, two days ago, yesterday (relative to the real clock). */
export function seedDays(now = new Date()) {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return {
    d0: new Date(today - 30 * DAY_MS),
    d1: new Date(today - 2 * DAY_MS),
    d2: new Date(today - DAY_MS),
  };
}

interface SeedStep {
  step: 'prune' | 'summarize' | 'finalize';
  attempt: number;
  status: 'completed' | 'failed';
  /** Milliseconds after the request. */
  from: number;
  to: number;
  detail?: Record<string, unknown>;
  error?: string;
}

interface SeedCompaction {
  id: string;
  session: 'a1' | 'a2' | 'g1';
  day: 'd0' | 'd1' | 'd2';
  /** Hour of the request (UTC). */
  hour: number;
  /** Milliseconds after the request. */
  start?: number;
  end?: number;
  row: Omit<NewCompactionRow, 'id' | 'sessionPk' | 'requestedAt' | 'startedAt' | 'finishedAt'>;
  steps: SeedStep[];
}

const llm = (model: string, input: number, output: number, costUsd: number, calls: number) => ({
  kind: 'summary',
  writtenBy: 'llm',
  llm: { model, usage: { input, output }, costUsd },
  detail: { calls, chunks: calls },
});

/**
 * Tenants `acme` (sessions a1, a2) and `globex` (g1) with nine compactions covering every status,
 * reason and strategy, retries, failures and LLM spend; docs/ANALYTICS.md's example queries are
 * checked against it (the expected numbers are derived in analytics.test.ts).
 */
export const SEED_COMPACTIONS: SeedCompaction[] = [
  {
    id: 'c0',
    session: 'a1',
    day: 'd0',
    hour: 10,
    start: 100,
    end: 2100,
    row: {
      reason: 'auto',
      strategy: 'summarize',
      status: 'completed',
      attempts: 1,
      tokensBefore: 80_000,
      tokensAfter: 30_000,
      messagesBefore: 40,
      messagesAfter: 10,
      model: 'gpt-4o-mini',
      usageInput: 10_000,
      usageOutput: 1_000,
      costUsd: 0.002,
      details: { calls: 1, writtenBy: 'llm' },
    },
    steps: [
      { step: 'prune', attempt: 1, status: 'completed', from: 100, to: 400, detail: { parts: 0, tokens: 0 } },
      {
        step: 'summarize',
        attempt: 1,
        status: 'completed',
        from: 400,
        to: 1900,
        detail: llm('gpt-4o-mini', 10_000, 1_000, 0.002, 1),
      },
      {
        step: 'finalize',
        attempt: 1,
        status: 'completed',
        from: 1900,
        to: 2100,
        detail: { tokensAfter: 30_000 },
      },
    ],
  },
  {
    id: 'c1',
    session: 'a1',
    day: 'd1',
    hour: 10,
    start: 500,
    end: 4500,
    row: {
      reason: 'auto',
      strategy: 'summarize',
      status: 'completed',
      attempts: 1,
      tokensBefore: 100_000,
      tokensAfter: 30_000,
      prunedParts: 3,
      prunedTokens: 6_000,
      model: 'gpt-4o-mini',
      usageInput: 20_000,
      usageOutput: 1_500,
      costUsd: 0.004,
      instructions: `Keep ${SECRET}`,
      details: { calls: 1, writtenBy: 'llm', note: SECRET },
    },
    steps: [
      {
        step: 'prune',
        attempt: 1,
        status: 'completed',
        from: 500,
        to: 1000,
        detail: { parts: 3, tokens: 6_000 },
      },
      {
        step: 'summarize',
        attempt: 1,
        status: 'completed',
        from: 1000,
        to: 4000,
        detail: { ...llm('gpt-4o-mini', 20_000, 1_500, 0.004, 1), note: SECRET },
      },
      {
        step: 'finalize',
        attempt: 1,
        status: 'completed',
        from: 4000,
        to: 4500,
        detail: { tokensAfter: 30_000 },
      },
    ],
  },
  {
    id: 'c2',
    session: 'a1',
    day: 'd2',
    hour: 9,
    start: 1000,
    end: 16_400,
    row: {
      reason: 'overflow',
      strategy: 'summarize',
      status: 'completed',
      attempts: 2,
      tokensBefore: 120_000,
      tokensAfter: 40_000,
      prunedParts: 2,
      prunedTokens: 4_000,
      model: 'gpt-4o-mini',
      usageInput: 30_000,
      usageOutput: 2_000,
      costUsd: 0.006,
      summaryDraft: { summaryText: SECRET },
      details: { calls: 2, writtenBy: 'llm' },
    },
    steps: [
      {
        step: 'prune',
        attempt: 1,
        status: 'completed',
        from: 1000,
        to: 1200,
        detail: { parts: 2, tokens: 4_000 },
      },
      {
        step: 'summarize',
        attempt: 1,
        status: 'failed',
        from: 1200,
        to: 3200,
        error: 'LLM 429: rate limited',
      },
      {
        step: 'prune',
        attempt: 2,
        status: 'completed',
        from: 10_000,
        to: 10_100,
        detail: { parts: 0, tokens: 0 },
      },
      {
        step: 'summarize',
        attempt: 2,
        status: 'completed',
        from: 10_100,
        to: 16_100,
        detail: llm('gpt-4o-mini', 30_000, 2_000, 0.006, 2),
      },
      {
        step: 'finalize',
        attempt: 2,
        status: 'completed',
        from: 16_100,
        to: 16_400,
        detail: { tokensAfter: 40_000 },
      },
    ],
  },
  {
    id: 'c3',
    session: 'a1',
    day: 'd2',
    hour: 12,
    start: 200,
    end: 1200,
    row: {
      reason: 'manual',
      strategy: 'truncate',
      status: 'completed',
      attempts: 1,
      tokensBefore: 50_000,
      tokensAfter: 20_000,
      details: { writtenBy: 'truncate' },
    },
    steps: [
      { step: 'prune', attempt: 1, status: 'completed', from: 200, to: 400, detail: { parts: 0, tokens: 0 } },
      {
        step: 'summarize',
        attempt: 1,
        status: 'completed',
        from: 400,
        to: 900,
        detail: { kind: 'summary', writtenBy: 'truncate', llm: null },
      },
      {
        step: 'finalize',
        attempt: 1,
        status: 'completed',
        from: 900,
        to: 1200,
        detail: { tokensAfter: 20_000 },
      },
    ],
  },
  {
    id: 'c4',
    session: 'a2',
    day: 'd1',
    hour: 11,
    start: 1000,
    end: 3000,
    row: {
      reason: 'auto',
      strategy: 'summarize',
      status: 'failed',
      attempts: 1,
      tokensBefore: 90_000,
      prunedParts: 1,
      prunedTokens: 1_000,
      errorCode: 'llm_fatal',
      errorMessage: 'summarizer: 400 model not found',
      details: { fallback: { code: 'llm_fatal', message: SECRET } },
    },
    steps: [
      {
        step: 'prune',
        attempt: 1,
        status: 'completed',
        from: 1000,
        to: 1500,
        detail: { parts: 1, tokens: 1_000 },
      },
      {
        step: 'summarize',
        attempt: 1,
        status: 'failed',
        from: 1500,
        to: 3000,
        error: 'summarizer: 400 model not found',
      },
    ],
  },
  {
    id: 'c5',
    session: 'a2',
    day: 'd2',
    hour: 8,
    start: 500,
    end: 300_000,
    row: {
      reason: 'auto',
      strategy: 'summarize',
      status: 'failed',
      attempts: 3,
      tokensBefore: 95_000,
      errorCode: 'attempts_exhausted',
      errorMessage: 'claimed 3 times without finishing',
    },
    steps: [],
  },
  {
    id: 'c6',
    session: 'g1',
    day: 'd1',
    hour: 14,
    start: 100,
    end: 8100,
    row: {
      reason: 'auto',
      strategy: 'summarize',
      status: 'completed',
      attempts: 1,
      tokensBefore: 200_000,
      tokensAfter: 50_000,
      prunedParts: 10,
      prunedTokens: 20_000,
      model: 'gpt-4o',
      usageInput: 50_000,
      usageOutput: 3_000,
      costUsd: 0.2,
      details: { calls: 3, writtenBy: 'llm' },
    },
    steps: [
      {
        step: 'prune',
        attempt: 1,
        status: 'completed',
        from: 100,
        to: 200,
        detail: { parts: 10, tokens: 20_000 },
      },
      {
        step: 'summarize',
        attempt: 1,
        status: 'completed',
        from: 200,
        to: 8000,
        detail: llm('gpt-4o', 50_000, 3_000, 0.2, 3),
      },
      {
        step: 'finalize',
        attempt: 1,
        status: 'completed',
        from: 8000,
        to: 8100,
        detail: { tokensAfter: 50_000 },
      },
    ],
  },
  {
    id: 'c7',
    session: 'g1',
    day: 'd1',
    hour: 15,
    start: 100,
    end: 300,
    row: { reason: 'auto', strategy: 'summarize', status: 'skipped', attempts: 1, tokensBefore: 10_000 },
    steps: [
      { step: 'prune', attempt: 1, status: 'completed', from: 100, to: 200, detail: { parts: 0, tokens: 0 } },
      {
        step: 'summarize',
        attempt: 1,
        status: 'completed',
        from: 200,
        to: 300,
        detail: { kind: 'nothing-to-compact' },
      },
    ],
  },
  {
    id: 'c8',
    session: 'g1',
    day: 'd2',
    hour: 20,
    row: { reason: 'manual', strategy: 'summarize', status: 'pending' },
    steps: [],
  },
];

/** Writes the sessions, a1's three messages (text planted with {@link SECRET}) and the compactions. */
export async function seedAnalytics(db: Db, days = seedDays()) {
  const a1 = await createTestSession(db, 'acme', 'a1');
  const a2 = await createTestSession(db, 'acme', 'a2');
  const g1 = await createTestSession(db, 'globex', 'g1');
  const sessionPks = { a1: a1.pk, a2: a2.pk, g1: g1.pk };
  await appendTestMessages(db, a1.pk, [
    newMessage('user', [text(`Fix the parser. ${SECRET}`)]),
    newMessage('assistant', [tool('call_1', `file contents ${SECRET}`)]),
    newMessage('assistant', [text(`Done. ${SECRET}`)]),
  ]);
  for (const c of SEED_COMPACTIONS) {
    const requested = days[c.day].getTime() + c.hour * 3_600_000;
    const offset = (ms: number | undefined) => (ms === undefined ? null : new Date(requested + ms));
    await insertCompaction(db, {
      ...c.row,
      id: c.id,
      sessionPk: sessionPks[c.session],
      requestedAt: new Date(requested),
      startedAt: offset(c.start),
      finishedAt: offset(c.end),
    });
    for (const s of c.steps) {
      await insertCompactionStep(db, {
        compactionId: c.id,
        step: s.step,
        attempt: s.attempt,
        status: s.status,
        detail: s.detail ?? {},
        errorMessage: s.error ?? null,
        startedAt: new Date(requested + s.from),
        finishedAt: new Date(requested + s.to),
      });
    }
  }
  return { sessionPks, days };
}
