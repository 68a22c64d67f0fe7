/**
 * Prepared-ahead compactions (policy `prepare`), end to end: the API's auto trigger, real
 * BullMQ workers on the API's queues, Postgres, and an LLM stub whose summaries take 3 s. Past
 * the soft threshold a worker writes the summary ahead; at the trigger the compaction finalizes
 * that draft without calling the summarizer, so the served context fits well within a second
 * of the append that crossed the trigger.
 */
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createLlm } from '@compactor/llm';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { startWorkers, type RunningWorkers } from '@compactor/queue';
import { getTokenizer } from '@compactor/tokenizer';
import { silentLog } from '@compactor/workflow';
import { useTestApi } from '../test-support/api';
import { newSession, sessionPk } from '../test-support/helpers';

const api = useTestApi();
let stub: LlmStub | undefined;
let workers: RunningWorkers | undefined;

const SUMMARIZER_LATENCY_MS = 3_000;

beforeAll(async () => {
  stub = await startLlmStub({ faults: { latencyMs: SUMMARIZER_LATENCY_MS } });
});
afterEach(async () => {
  await workers?.close(10_000);
  workers = undefined;
});
afterAll(async () => {
  await stub?.close();
});

function runWorkers(): void {
  workers = startWorkers(
    {
      db: api.database.db,
      llm: createLlm({ apiKey: 'stub', baseURL: stub!.url, timeoutMs: 20_000 }),
      clock: () => new Date(),
      log: silentLog,
      // The API's counter (useTestApi: o200k for every model), as a deployment configures both alike.
      tokenizerFor: () => getTokenizer('o200k_base'),
    },
    {
      connection: { url: inject('redisUrl'), maxRetriesPerRequest: null },
      prefix: api.queuePrefix,
      concurrency: 4,
    },
  );
}

/**
 * Window 8,000, output 1,000: usable 7,000. The ratio trigger fires at 4,000 tokens; the soft
 * threshold is 0.7 × 4,000 = 2,800. Auto compactions keep 0.2 × 8,000 = 1,600 tokens, so what
 * the draft keeps plus the crossing turn fits without clamping.
 */
const model = { id: 'tiny-model', contextWindow: 8_000, maxOutputTokens: 1_000 };
const policy = (prepare: { atRatio: number } | null) => ({
  trigger: { kind: 'ratio', ratio: 0.5 },
  keepRecent: { autoRatio: 0.2 },
  prune: false,
  prepare,
});
const SOFT = 2_800;
const TRIGGER = 4_000;

/** About `words` tokens of plain prose. */
const prose = (topic: string, words: number) =>
  `${topic}: ` +
  Array.from({ length: words }, (_, i) => ['alpha', 'beta', 'gamma', 'delta'][i % 4]).join(' ');
const turn = (n: number, words = 120) => [
  { role: 'user', parts: [{ type: 'text', text: prose(`Question ${n}`, words) }] },
  { role: 'assistant', parts: [{ type: 'text', text: prose(`Answer ${n}`, words) }], finish: 'stop' },
];

interface Status {
  tokens: number;
  usable: number;
  triggerTokens: number;
  activeCompaction: { id: string } | null;
  lastCompaction: { id: string; status: string } | null;
}
async function append(session: string, messages: unknown[]): Promise<Status> {
  const response = await api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: { messages },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().status as Status;
}
async function statusOf(session: string): Promise<Status> {
  return (await api.request({ method: 'GET', url: `/v1/sessions/${session}` })).json().status as Status;
}

/** Appends turns until the session is past the soft threshold, below its trigger. */
async function fillToSoftThreshold(session: string): Promise<Status> {
  for (let n = 1; ; n++) {
    const status = await append(session, turn(n));
    expect(status.activeCompaction, `turn ${n} started a compaction`).toBeNull();
    expect(status.tokens).toBeLessThan(TRIGGER);
    if (status.tokens >= SOFT) return status;
  }
}

async function draftOf(session: string) {
  const { rows } = await api.database.database.pool.query(
    `select id, status, cut_seq, covers_through_seq, base_compaction_id, model, usage_input, usage_output, error_code
     from prepared_summaries where session_pk = $1`,
    [await sessionPk(api, session)],
  );
  return rows[0] as
    | {
        id: string;
        status: string;
        cut_seq: number | null;
        covers_through_seq: number | null;
        model: string | null;
        usage_input: number | null;
        usage_output: number | null;
        error_code: string | null;
      }
    | undefined;
}
async function prepareJobsOf(session: string) {
  const pk = await sessionPk(api, session);
  return (await api.jobs('prepare')).filter((job) => job.data.sessionPk === pk);
}

describe('a session with `prepare` crossing its trigger', () => {
  it('finalizes the draft at the crossing, with no summarizer call after it, and the context fits', async () => {
    runWorkers();
    await newSession(api, 'prep-fast', { model, policy: policy({ atRatio: 0.7 }) });
    const soft = await fillToSoftThreshold('prep-fast');
    expect(soft.triggerTokens).toBe(TRIGGER);

    // The worker writes the draft (3 s of summarizer) while the context stays as it was.
    const ready = await vi.waitFor(
      async () => {
        const draft = await draftOf('prep-fast');
        if (draft?.status !== 'ready') throw new Error(`draft ${draft?.status}`);
        return draft;
      },
      { timeout: 20_000, interval: 100 },
    );
    const unchanged = await statusOf('prep-fast');
    expect(unchanged.tokens).toBe(soft.tokens);
    expect(unchanged.lastCompaction).toBeNull();
    expect(await prepareJobsOf('prep-fast')).toHaveLength(1);
    const calls = stub!.requests.length;
    expect(calls).toBeGreaterThan(0);

    // The crossing: about 1,100 more tokens take the session past 4,000.
    const crossing = await append('prep-fast', turn(99, 550));
    expect(crossing.activeCompaction).not.toBeNull();
    const compactionId = crossing.activeCompaction!.id;
    // The moment the compaction's transaction committed is when the context it serves changed.
    // How soon is the replay-cache benchmark's measure (docs/BENCHMARKS.md); here, that it happens
    // without the summarizer: the stub takes 3 s a call, and none is made.
    await vi.waitFor(
      async () => {
        const { rows } = await api.database.database.pool.query(
          `select status from compactions where id = $1`,
          [compactionId],
        );
        if (rows[0]?.status !== 'completed') throw new Error(`compaction ${rows[0]?.status}`);
      },
      { timeout: 60_000, interval: 10 },
    );
    const served = await statusOf('prep-fast');
    expect(served.lastCompaction).toMatchObject({ id: compactionId, status: 'completed' });
    expect(served.activeCompaction).toBeNull();
    expect(served.tokens).toBeLessThanOrEqual(served.usable);
    expect(served.tokens).toBeLessThan(crossing.tokens);
    expect(stub!.requests.length, 'no summarizer call after the crossing').toBe(calls);

    // The compaction says it finalized the draft, and carries the draft's LLM spend.
    const shown = (await api.request({ method: 'GET', url: `/v1/compactions/${compactionId}` })).json();
    expect(shown).toMatchObject({ status: 'completed', reason: 'auto', boundarySeq: ready.cut_seq });
    const { rows } = await api.database.database.pool.query(
      `select details, model, usage_input, usage_output from compactions where id = $1`,
      [compactionId],
    );
    expect(rows[0].details.prepared).toEqual({ draftId: ready.id, preparedAt: expect.any(String) });
    expect(rows[0].details.writtenBy).toBe('llm');
    expect(rows[0]).toMatchObject({
      model: ready.model,
      usage_input: ready.usage_input,
      usage_output: ready.usage_output,
    });
  }, 60_000);

  it('asks for one draft per crossing, not one per append', async () => {
    // No workers: the request stays pending, as it would while the summarizer writes it.
    await newSession(api, 'prep-once', { model, policy: policy({ atRatio: 0.7 }) });
    const soft = await fillToSoftThreshold('prep-once');
    const jobs = await prepareJobsOf('prep-once');
    expect(jobs).toHaveLength(1);
    // The draft is planned for the trigger's moment: the job knows how far below it the session was.
    expect(jobs[0]!.data.headroomTokens).toBe(TRIGGER - soft.tokens);
    const first = await draftOf('prep-once');
    expect(first?.status).toBe('pending');
    // Further appends in the soft zone ask for nothing more.
    const more = await append('prep-once', [
      { role: 'user', parts: [{ type: 'text', text: prose('And one more thing', 60) }] },
    ]);
    expect(more.tokens).toBeGreaterThan(soft.tokens);
    expect(more.tokens).toBeLessThan(TRIGGER);
    expect(await prepareJobsOf('prep-once')).toHaveLength(1);
    expect((await draftOf('prep-once'))?.id).toBe(first?.id);
  });

  it('refuses an invalid `prepare` with 400, writing nothing', async () => {
    const before = await api.counts();
    for (const prepare of [{ atRatio: 1 }, { atRatio: 0 }, { atRatio: '0.7' }, { atRatio: 0.7, x: 1 }, 0.7]) {
      const response = await api.request({
        method: 'POST',
        url: '/v1/sessions',
        payload: { id: 'prep-bad', model, policy: { prepare } },
      });
      expect(response.statusCode, JSON.stringify(prepare)).toBe(400);
    }
    expect(await api.counts()).toEqual(before);
  });

  it('without `prepare` (the default) asks for no draft', async () => {
    await newSession(api, 'prep-off', { model, policy: policy(null) });
    await fillToSoftThreshold('prep-off');
    await newSession(api, 'prep-default', { model });
    await append('prep-default', turn(1, 1_200));
    expect(await prepareJobsOf('prep-off')).toEqual([]);
    expect(await prepareJobsOf('prep-default')).toEqual([]);
    expect(await draftOf('prep-off')).toBeUndefined();
    expect(await draftOf('prep-default')).toBeUndefined();
  });

  it('a compaction at the trigger while the draft is being written waits for it: one summarizer call in all', async () => {
    runWorkers();
    await newSession(api, 'prep-race', { model, policy: policy({ atRatio: 0.7 }) });
    await fillToSoftThreshold('prep-race');
    // This session's draft has begun and a summarizer call is under way (an earlier test's
    // queued draft may be another); the trigger fires before it answers.
    await vi.waitFor(
      async () => {
        expect((await draftOf('prep-race'))?.covers_through_seq).not.toBeNull();
        expect(stub!.stats.inFlight).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 20 },
    );
    const calls = stub!.requests.length;
    const crossing = await append('prep-race', turn(99, 550));
    const compactionId = crossing.activeCompaction!.id;
    const done = await vi.waitFor(
      async () => {
        const status = await statusOf('prep-race');
        if (status.lastCompaction?.id !== compactionId) throw new Error('not yet');
        return status;
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(done.lastCompaction!.status).toBe('completed');
    expect(done.tokens).toBeLessThanOrEqual(done.usable);
    const { rows } = await api.database.database.pool.query(`select details from compactions where id = $1`, [
      compactionId,
    ]);
    const draft = await draftOf('prep-race');
    expect(rows[0].details.prepared).toEqual({ draftId: draft!.id, preparedAt: expect.any(String) });
    expect(rows[0].details.writtenBy).toBe('llm');
    expect(stub!.requests.length, 'the compaction made no summarizer call of its own').toBe(calls);
  }, 60_000);
});
