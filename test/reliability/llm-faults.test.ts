import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import type { PolicyInput } from '@compactor/core';
import type { RecordedRequest, StubFaultConfigInput } from '@compactor/llm-stub';
import { generateCodingSession } from '@compactor/testing/fixtures';
import {
  compactionStates,
  expectContext,
  expectNoWorkerDiedOnItsOwn,
  expectSummaryStored,
  seedSession,
  summaryMessageCounts,
  useReliabilityRig,
  waitForTerminal,
  type CompactionState,
} from './harness';

/**
 * LLM faults end to end through a worker process: rate limits with Retry-After, server errors,
 * timeouts, garbage, context-length errors. Every compaction ends — completed by the LLM after
 * retries, completed by the truncate fallback, or failed with a code — within JOB_ATTEMPTS tries,
 * in exactly one terminal state, and nothing runs it again afterwards (no compaction loop).
 */

const ATTEMPTS = 3;
const LLM_TIMEOUT_MS = 1_000;

const rig = useReliabilityRig({
  label: 'rel-llm',
  attempts: ATTEMPTS,
  // The 429 test relies on it: only the Retry-After explains a wait of over half a second.
  backoffMs: 50,
  workerEnv: { LLM_TIMEOUT_MS: String(LLM_TIMEOUT_MS) },
  setup: (r) => r.fleet.spawn(),
});
const { database, fleet } = rig;

afterEach(() => rig.stub.setFaults({}));

/** One session falls back to truncation (the default policy), one fails instead (`fallback: 'fail'`). */
const FALLBACK_POLICIES: Array<{ name: 'truncate' | 'fail'; policy: PolicyInput }> = [
  { name: 'truncate', policy: {} },
  { name: 'fail', policy: { fallback: 'fail' } },
];

let seedCounter = 400;

interface Ended {
  row: CompactionState;
  fallbackPolicy: 'truncate' | 'fail';
  /** The LLM requests of this scenario (all compactions'). */
  llmRequests: readonly RecordedRequest[];
}

/**
 * Runs one compaction per policy under `faults`, waits until all end, and checks what must hold
 * whatever the fault: bounded tries, one terminal state, a consistent context, and no further
 * try after the end (the reconciler and the queue leave a finished compaction alone).
 */
async function underFaults(
  faults: StubFaultConfigInput,
  options: { policies?: typeof FALLBACK_POLICIES; extraPolicy?: PolicyInput } = {},
): Promise<Ended[]> {
  const db = database.db;
  const policies = options.policies ?? FALLBACK_POLICIES;
  const sessions = [];
  for (const { policy } of policies) {
    sessions.push(
      await seedSession(db, generateCodingSession({ turns: 4, seed: seedCounter++ }), {
        policy: { ...policy, ...options.extraPolicy },
      }),
    );
  }
  rig.stub.setFaults(faults);
  const requestsBefore = rig.stub.requests.length;
  const requested = await rig.requestCompactions(sessions);
  const ids = requested.map((r) => r.compaction.id);
  const rows = await waitForTerminal(db, ids, 30_000);
  rig.stub.setFaults({});
  const llmRequests = rig.stub.requests.slice(requestsBefore);

  const summaries = await summaryMessageCounts(db);
  const stepCount = async () =>
    (
      await db.execute<{ n: number }>(
        sql`select count(*)::int as n from compaction_steps where compaction_id = any(${sql.param(ids)}::text[])`,
      )
    ).rows[0]!.n;
  const stepsAtEnd = await stepCount();
  for (const [i, row] of rows.entries()) {
    expect(row.attempts, `${row.id}: tries`).toBeGreaterThanOrEqual(1);
    expect(row.attempts, `${row.id}: tries`).toBeLessThanOrEqual(ATTEMPTS);
    expect(row.finished_ms, row.id).toEqual(expect.any(Number));
    expect(row.step, row.id).toBeNull();
    if (row.status === 'completed') {
      expect(row.error_code, row.id).toBeNull();
      expectSummaryStored(summaries, row);
      await expectContext(db, sessions[i]!.pk, row.id, { state: 'compacted', compactionId: row.id });
    } else {
      expect(row.status, row.id).toBe('failed');
      expect(row.error_code, row.id).toEqual(expect.any(String));
      expect(summaries.get(row.id), `${row.id}: a failed compaction writes no summary`).toBeUndefined();
      await expectContext(db, sessions[i]!.pk, row.id, { state: 'uncompacted' });
    }
  }

  // No loop: three reconciler passes later nothing has touched them, and their jobs are done.
  await sleep(1_500);
  const later = await compactionStates(db, ids);
  const state = (r: CompactionState) => [r.id, r.status, r.attempts, r.fence];
  expect(later.map(state)).toEqual(rows.map(state).sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
  expect(await stepCount()).toBe(stepsAtEnd);
  for (const id of ids) {
    // BullMQ marks the job completed just after the processor returned (the row is written first).
    await expect
      .poll(async () => (await rig.requester.queues.queue('compact').getJob(id))?.getState(), {
        timeout: 5_000,
        message: id,
      })
      .toBe('completed');
  }
  expectNoWorkerDiedOnItsOwn(fleet);
  return rows.map((row, i) => ({ row, fallbackPolicy: policies[i]!.name, llmRequests }));
}

/** Every try failed transiently: the last try falls back to truncation, or fails by policy. */
function expectExhausted(ended: Ended[]) {
  // Each try asked the LLM (once, or twice for a split turn), and nothing asked it after the last.
  const requests = ended[0]!.llmRequests.length;
  expect(requests, 'LLM requests').toBeGreaterThanOrEqual(ended.length * ATTEMPTS);
  expect(requests, 'LLM requests').toBeLessThanOrEqual(ended.length * ATTEMPTS * 2);
  for (const { row, fallbackPolicy } of ended) {
    expect(row.attempts, row.id).toBe(ATTEMPTS);
    if (fallbackPolicy === 'truncate') {
      expect(row).toMatchObject({ status: 'completed' });
      expect(row.details).toMatchObject({
        writtenBy: 'truncate',
        fallback: { code: 'llm_retries_exhausted' },
      });
    } else {
      expect(row).toMatchObject({ status: 'failed', error_code: 'llm_retries_exhausted' });
    }
  }
}

async function summarizeStarts(
  compactionId: string,
): Promise<Array<{ started: number; finished: number | null }>> {
  const rows = await database.db.execute<{ started: number; finished: number | null }>(sql`
    select (extract(epoch from started_at) * 1000)::float8 as started, (extract(epoch from finished_at) * 1000)::float8 as finished
    from compaction_steps where compaction_id = ${compactionId} and step = 'summarize' order by pk
  `);
  return rows.rows;
}

describe('LLM faults through a worker process', () => {
  it('429 with Retry-After, then answers: completed by the LLM after waiting as asked', async () => {
    const ended = await underFaults(
      { status: 429, retryAfterSeconds: 0.6, times: 2 },
      { policies: [FALLBACK_POLICIES[0]!] },
    );
    const [{ row }] = ended as [Ended];
    expect(row).toMatchObject({ status: 'completed' });
    expect(row.details.writtenBy).toBe('llm');
    expect(row.attempts).toBeGreaterThanOrEqual(2);
    const tries = await summarizeStarts(row.id);
    for (let i = 1; i < tries.length; i++) {
      // Backoff base is 50 ms: only the Retry-After explains a wait of over half a second.
      expect(tries[i]!.started - tries[i - 1]!.finished!).toBeGreaterThanOrEqual(550);
    }
  });

  it('429 on every try: retries exhausted, then the fallback or a failure', async () => {
    expectExhausted(await underFaults({ status: 429, retryAfterSeconds: 0.2 }));
  });

  it('500 on every try: retries exhausted, then the fallback or a failure', async () => {
    expectExhausted(await underFaults({ status: 500 }));
  });

  it('garbage (a malformed body) on every try: retries exhausted, then the fallback or a failure', async () => {
    expectExhausted(await underFaults({ output: 'malformed' }));
  });

  it(`no answer within LLM_TIMEOUT_MS (${LLM_TIMEOUT_MS} ms): every try times out, then the fallback or a failure`, async () => {
    const ended = await underFaults({ latencyMs: LLM_TIMEOUT_MS * 2.5 });
    expect(
      ended[0]!.llmRequests.map((r) => (r.clientClosed ? 'abandoned by the worker' : `answered ${r.status}`)),
      `each LLM request abandoned after LLM_TIMEOUT_MS=${LLM_TIMEOUT_MS}`,
    ).toEqual(ended[0]!.llmRequests.map(() => 'abandoned by the worker'));
    expectExhausted(ended);
  });

  it("no answer within the policy's summarizer.timeoutMs: every try times out, then the fallback or a failure", async () => {
    expectExhausted(
      await underFaults({ latencyMs: 2_500 }, { extraPolicy: { summarizer: { timeoutMs: 1_000 } } }),
    );
  });

  it('context length exceeded, window too small for any summary: no retries, then the fallback or a failure', async () => {
    // The first overflow error teaches the client the window; one that cannot hold the
    // instructions and a summary is fatal (no request could succeed), not retried.
    const ended = await underFaults({ contextWindow: 600 });
    for (const { row, fallbackPolicy } of ended) {
      expect(row.attempts, row.id).toBe(1);
      if (fallbackPolicy === 'truncate') {
        expect(row).toMatchObject({ status: 'completed' });
        expect(row.details).toMatchObject({
          writtenBy: 'truncate',
          fallback: { code: expect.stringMatching(/^llm_(overflow|fatal)$/) },
        });
      } else {
        expect(row).toMatchObject({
          status: 'failed',
          error_code: expect.stringMatching(/^llm_(overflow|fatal)$/),
        });
      }
    }
  });

  it('context length exceeded, window smaller than the session said: the summary is written in fitting chunks', async () => {
    // A ~5,300-token prompt plus 1,000 output tokens does not fit a 5,000-token window; halving
    // the request after the overflow error gives chunks that do.
    const ended = await underFaults(
      { contextWindow: 5_000 },
      { extraPolicy: { summarizer: { maxOutputTokens: 1_000 } } },
    );
    expect(
      ended[0]!.llmRequests.filter((r) => r.status === 400).length,
      'overflow errors',
    ).toBeGreaterThanOrEqual(ended.length);
    for (const { row } of ended) {
      expect(row, row.id).toMatchObject({ status: 'completed', attempts: 1 });
      expect(row.details.writtenBy, row.id).toBe('llm');
      expect(row.details.chunks, row.id).toBeGreaterThan(1);
    }
  });
});
