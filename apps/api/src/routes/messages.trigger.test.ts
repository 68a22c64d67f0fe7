/**
 * The auto trigger after `POST …/messages` and `PATCH …/messages/:id`: decided on stored counts,
 * it starts a compaction (and its job) when the threshold is crossed, and a prune job when a
 * turn finishes without one.
 */
import { describe, expect, it } from 'vitest';
import { updateCompaction } from '@compactor/db';
import { useTestApi } from '../test-support/api';
import { compactionsOf, sessionPk as pkOf, newSession as createSession } from '../test-support/helpers';

const api = useTestApi();
const newSession = (id: string, model: Record<string, unknown>) => createSession(api, id, { model });
const post = (session: string, messages: unknown[]) =>
  api.request({ method: 'POST', url: `/v1/sessions/${session}/messages`, payload: { messages } });

describe('the auto trigger on append and PATCH (from stored counts, never the history)', () => {
  /** Usable 7,000 tokens (window 8,000 − reserve 1,000). */
  const tiny = { id: 'tiny-model', contextWindow: 8_000, maxOutputTokens: 1_000 };

  const sessionPk = (id: string) => pkOf(api, id);
  const compactionRows = (id: string) => compactionsOf(api, id);
  async function pruneJobs(id: string) {
    const pk = await sessionPk(id);
    return (await api.jobs('prune')).filter((job) => job.data.sessionPk === pk);
  }
  const turn = (input: number, finish = 'stop', id?: string) => ({
    ...(id ? { id } : {}),
    role: 'assistant',
    parts: [{ type: 'text', text: 'done' }],
    finish,
    usage: { input, output: 10 },
  });
  const question = { role: 'user', parts: [{ type: 'text', text: 'next?' }] };
  /**
   * A user message of about `tokens` stored tokens: the history a turn's report measures. A
   * report adds at most a quarter of the usable input (1,750) over what is stored, so a session
   * reaches a size by holding it, not by a report saying so.
   */
  const history = (tokens: number) => ({
    role: 'user',
    parts: [{ type: 'text', text: ' word'.repeat(tokens) }],
  });
  /** A turn that read a file: `lines` lines of output, a few tokens each. */
  const toolTurn = (lines: number, finish = 'stop', id?: string) => ({
    ...(id ? { id } : {}),
    role: 'assistant',
    parts: [
      {
        type: 'tool',
        callId: `call_${id ?? lines}_${finish}`,
        tool: 'read',
        status: 'completed',
        input: { path: 'src/app.ts' },
        output: 'export const answer = 42;\n'.repeat(lines),
      },
    ],
    finish,
  });
  /** Budgets small enough for a few lines of output to be worth pruning. */
  const prunesEarly = { prune: true, pruning: { protectTokens: 0, minimumTokens: 0 } };
  const newPruningSession = (id: string) => createSession(api, id, { model: tiny, policy: prunesEarly });

  it('an append that crosses the threshold starts an auto compaction and enqueues its job', async () => {
    await newSession('t-cross', tiny);
    const response = await post('t-cross', [history(6_000), question, turn(7_500)]);
    expect(response.statusCode).toBe(201);
    const { compaction, status } = response.json();
    expect(compaction).toEqual({ id: expect.stringMatching(/^cmp_/), status: 'pending', reason: 'auto' });
    expect(status.activeCompaction).toMatchObject({ id: compaction.id, reason: 'auto' });
    expect((await api.queues.queue('compact').getJob(compaction.id))?.data).toEqual({
      compactionId: compaction.id,
    });
    // The compaction prunes itself: no separate turn prune.
    expect(await pruneJobs('t-cross')).toEqual([]);

    // While it is active, further appends start nothing.
    const next = await post('t-cross', [question, turn(7_600)]);
    expect(next.json().compaction).toBeNull();
    expect(next.json().status.activeCompaction.id).toBe(compaction.id);
    expect(await compactionRows('t-cross')).toHaveLength(1);
  });

  it("the topic preset's 6,000-token trigger counts history, not a pinned system prompt", async () => {
    await createSession(api, 't-topic-pinned', {
      model: { id: 'big-model', contextWindow: 128_000, maxOutputTokens: 4_000 },
      policy: { preset: 'topic' },
    });
    const words = (n: number) => ' word'.repeat(n);
    const system = { role: 'system', parts: [{ type: 'text', text: words(5_500) }] };
    const chat = [
      { role: 'user', parts: [{ type: 'text', text: words(300) }] },
      { role: 'assistant', parts: [{ type: 'text', text: words(300) }], finish: 'stop' },
    ];
    const response = await post('t-topic-pinned', [system, ...chat]);
    expect(response.statusCode).toBe(201);
    const { compaction, status } = response.json();
    // 6,100 tokens in the prompt, of which ~600 history: below the 6,000 trigger, ~10 % of it.
    expect(status.tokens).toBeGreaterThan(6_000);
    expect(status.pinnedTokens).toBeGreaterThanOrEqual(5_500);
    expect(status.triggerTokens).toBe(6_000);
    expect(status.percent).toBeCloseTo(((status.tokens - status.pinnedTokens) / 6_000) * 100, 1);
    expect(status.percent).toBeLessThan(15);
    expect(compaction).toBeNull();
    expect(await compactionRows('t-topic-pinned')).toEqual([]);
  });

  it('after a compaction that was skipped, appends do not start another until the session grew', async () => {
    // Half of the 8,000 window: the threshold is 4,000 tokens, a quarter of it 1,000.
    await createSession(api, 't-skipped', {
      model: tiny,
      policy: { trigger: { kind: 'ratio', ratio: 0.5 } },
    });
    const first = (await post('t-skipped', [history(3_600), question, turn(4_100)])).json().compaction;
    expect(first).toMatchObject({ reason: 'auto' });
    // The worker found nothing to compact (one huge turn, say) at 4,110 tokens.
    await updateCompaction(api.database.db, first.id, {
      status: 'skipped',
      tokensBefore: 4_110,
      finishedAt: new Date(),
    });
    const held = await post('t-skipped', [question, turn(4_600)]);
    expect(held.json().compaction).toBeNull();
    expect(await compactionRows('t-skipped')).toHaveLength(1);
    // A quarter of the threshold appended since: it tries again.
    const again = await post('t-skipped', [question, turn(5_200)]);
    expect(again.json().compaction).toMatchObject({ reason: 'auto' });
    expect(await compactionRows('t-skipped')).toHaveLength(2);
  });

  it('a failed compaction does not hold an emergency; one the pinned messages made fail holds the next until the session grew', async () => {
    await newSession('t-failed', tiny);
    const first = (await post('t-failed', [history(6_000), question, turn(7_500)])).json().compaction;
    await updateCompaction(api.database.db, first.id, {
      status: 'failed',
      errorCode: 'llm_retries_exhausted',
      tokensBefore: 7_510,
      finishedAt: new Date(),
    });
    const emergency = await post('t-failed', [question, turn(9_000)]);
    expect(emergency.json().compaction).toMatchObject({ reason: 'overflow' });

    // The emergency fails because the pinned system messages alone overflow: no compaction can
    // fix that, and the overflow report is still the newest usage, but appends no longer request
    // one emergency each.
    await updateCompaction(api.database.db, emergency.json().compaction.id, {
      status: 'failed',
      errorCode: 'context_cannot_fit',
      tokensBefore: 9_010,
      finishedAt: new Date(),
    });
    for (const input of [9_100, 9_200]) {
      expect((await post('t-failed', [question, turn(input)])).json().compaction).toBeNull();
    }
    expect(await compactionRows('t-failed')).toHaveLength(2);
    // Once the session grew by a quarter of the threshold, the next emergency is tried.
    const grown = await post('t-failed', [history(3_500), question, turn(9_010 + 2_000)]);
    expect(grown.json().compaction).toMatchObject({ reason: 'overflow' });
  });

  it('an append below the threshold starts nothing but the turn’s prune', async () => {
    await newPruningSession('t-below');
    const response = await post('t-below', [question, toolTurn(20)]);
    expect(response.json().compaction).toBeNull();
    expect(await compactionRows('t-below')).toEqual([]);
    const jobs = await pruneJobs('t-below');
    expect(jobs.map((job) => job.data)).toEqual([{ sessionPk: await sessionPk('t-below'), reason: 'turn' }]);
    expect(response.json().prune).toEqual({ jobId: jobs[0]!.id });
  });

  it('a turn prune is queued only when the context holds enough tool output to prune', async () => {
    // Protect 100 output tokens, prune more than 100: an output of about 70 tokens (7 a line)
    // can never be worth it; one of about 210 is (core pruneCouldSelect).
    const policy = { prune: true, pruning: { protectTokens: 100, minimumTokens: 100 } };
    await createSession(api, 't-worth', { model: tiny, policy });
    const small = await post('t-worth', [question, toolTurn(10)]);
    expect(small.json()).toMatchObject({ compaction: null, prune: null });
    expect(await pruneJobs('t-worth')).toEqual([]);
    const large = await post('t-worth', [question, toolTurn(30)]);
    const jobs = await pruneJobs('t-worth');
    expect(jobs).toHaveLength(1);
    expect(large.json().prune).toEqual({ jobId: jobs[0]!.id });
  });

  it('the default budgets (protect 40,000, prune above 20,000) queue nothing for a small context', async () => {
    await newSession('t-default-small', tiny);
    const response = await post('t-default-small', [question, toolTurn(200)]);
    expect(response.json()).toMatchObject({ compaction: null, prune: null });
    expect(await pruneJobs('t-default-small')).toEqual([]);
  });

  it.each([
    ['a turn that stops for tool calls', {}, 'tool-calls'],
    ['a session whose policy does not prune', { policy: { prune: false } }, 'stop'],
  ])('no turn prune for %s', async (_label, extra, finish) => {
    const id = `t-noprune-${finish}`;
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { id, model: tiny, ...extra },
    });
    expect(response.statusCode).toBe(201);
    expect((await post(id, [question, turn(100, finish)])).json().compaction).toBeNull();
    expect(await pruneJobs(id)).toEqual([]);
  });

  it('a reported prompt above the window starts an emergency (overflow) compaction', async () => {
    await newSession('t-silent', tiny);
    const response = await post('t-silent', [question, turn(9_000)]);
    expect(response.json().compaction).toMatchObject({ reason: 'overflow', status: 'pending' });
  });

  it('nothing starts with auto compaction off', async () => {
    const created = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { id: 't-off', model: tiny, policy: { auto: false } },
    });
    expect(created.statusCode).toBe(201);
    const response = await post('t-off', [history(6_500), question, turn(7_900)]);
    expect(response.json()).toMatchObject({ compaction: null, status: { overflow: true } });
    expect(await compactionRows('t-off')).toEqual([]);
  });

  it('a re-posted finished turn prunes nothing again', async () => {
    await newPruningSession('t-repost');
    await post('t-repost', [question, toolTurn(20, 'stop', 'a1')]);
    expect(await pruneJobs('t-repost')).toHaveLength(1);
    // The queue would collapse a second prune while the first waits: take the first away, so a
    // second enqueue would show.
    await api.queues.queue('prune').drain();
    expect(await pruneJobs('t-repost')).toHaveLength(0);
    const again = await post('t-repost', [toolTurn(20, 'stop', 'a1')]);
    expect(again.json().messages).toEqual([{ id: 'a1', seq: 2, created: false }]);
    expect(await pruneJobs('t-repost')).toHaveLength(0);
  });

  it('a turn’s prune is enqueued without an outbox entry; a manual one has one', async () => {
    await newPruningSession('t-outbox');
    await post('t-outbox', [question, toolTurn(20)]);
    expect(await pruneJobs('t-outbox')).toHaveLength(1);
    const outboxPrunes = async () => {
      const { rows } = await api.database.database.pool.query(
        `select payload->>'reason' as reason from outbox
         where job_name = 'prune' and (payload->>'sessionPk')::bigint = $1`,
        [await sessionPk('t-outbox')],
      );
      return rows.map((row: { reason: string }) => row.reason);
    };
    expect(await outboxPrunes()).toEqual([]);
    const manual = await api.request({ method: 'POST', url: '/v1/sessions/t-outbox/prune' });
    expect(manual.statusCode).toBe(202);
    expect(await outboxPrunes()).toEqual(['manual']);
  });

  it('PATCH that finishes a streamed turn over the threshold starts the compaction and says so', async () => {
    await newSession('t-patch', tiny);
    await post('t-patch', [history(6_000), question, { id: 'streamed', role: 'assistant', parts: [] }]);
    const response = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/t-patch/messages/streamed',
      payload: { finish: 'stop', usage: { input: 7_200, output: 5 } },
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ id: 'streamed', finish: 'stop' });
    expect(body.compaction).toEqual({ id: expect.any(String), status: 'pending', reason: 'auto' });
    expect(await api.queues.queue('compact').getJob(body.compaction.id)).toBeTruthy();
  });

  it('PATCH that finishes a small turn prunes; one that reports tool calls does not', async () => {
    await newPruningSession('t-patch-small');
    await post('t-patch-small', [
      question,
      toolTurn(20, 'tool-calls'),
      { id: 'calls', role: 'assistant', parts: [] },
      { id: 'answer', role: 'assistant', parts: [] },
    ]);
    const calls = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/t-patch-small/messages/calls',
      payload: { finish: 'tool-calls', usage: { input: 100, output: 5 } },
    });
    expect(calls.json().compaction).toBeNull();
    expect(await pruneJobs('t-patch-small')).toEqual([]);
    const answer = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/t-patch-small/messages/answer',
      payload: { finish: 'stop', usage: { input: 200, output: 5 } },
    });
    expect(answer.json().compaction).toBeNull();
    const jobs = await pruneJobs('t-patch-small');
    expect(jobs).toHaveLength(1);
    expect(answer.json().prune).toEqual({ jobId: jobs[0]!.id });
  });
});
