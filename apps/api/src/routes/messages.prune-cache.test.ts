/**
 * Cache-aware pruning (policy `pruning.cacheAware`): a finished turn's prune waits while the
 * provider's prompt cache is warm and the prune would not repay it within the horizon, and runs
 * as before otherwise. Real Postgres and Redis: the decision is made on the append path from the
 * status statement's sums, the skip is announced on the session's channel and counted.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import type { Counter } from 'prom-client';
import { eventHistoryKey } from '@compactor/queue';
import { createApiMetrics } from '../http/metrics';
import { useTestApi } from '../test-support/api';
import { newSession, sessionPk } from '../test-support/helpers';

const metrics = createApiMetrics();
const api = useTestApi({ server: { metrics } });

const post = (session: string, messages: unknown[]) =>
  api.request({ method: 'POST', url: `/v1/sessions/${session}/messages`, payload: { messages } });

/** Budgets that let a single output be pruned, so one turn decides. */
const prunesAnything = { protectTokens: 0, minimumTokens: 0 };
const system = {
  role: 'system',
  parts: [{ type: 'text', text: 'You are a careful coding agent. '.repeat(200) }],
};
const question = { role: 'user', parts: [{ type: 'text', text: 'what does app.ts export?' }] };
/**
 * A finished turn that read a file (about 2,100 output tokens) and reported a prompt of which
 * 20,000 tokens came from or went into the provider's cache.
 */
const toolTurn = (callId: string) => ({
  role: 'assistant',
  parts: [
    {
      type: 'tool',
      callId,
      tool: 'read',
      status: 'completed',
      input: { path: 'src/app.ts' },
      output: 'export const answer = 42;\n'.repeat(300),
    },
  ],
  finish: 'stop',
  usage: { input: 1_000, output: 10, cacheRead: 18_000, cacheWrite: 2_000 },
});
const answer = { role: 'assistant', parts: [{ type: 'text', text: 'It exports answer.' }], finish: 'stop' };

async function pruneJobs(id: string) {
  const pk = await sessionPk(api, id);
  return (await api.jobs('prune')).filter((job) => job.data.sessionPk === pk);
}

/** The session's events as published (its Redis history), oldest first. */
async function publishedEvents(id: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const redis = new Redis(inject('redisUrl'));
  try {
    const entries = await redis.xrange(eventHistoryKey(api.queuePrefix, await sessionPk(api, id)), '-', '+');
    return entries.map(([, fields]) => JSON.parse(fields[fields.indexOf('event') + 1]!));
  } finally {
    redis.disconnect();
  }
}

async function skippedCount(): Promise<number> {
  const values = (await (metrics.getSingleMetric('compactor_prunes_skipped_total') as Counter).get()).values;
  return values.filter((v) => v.labels['reason'] === 'cache_warm').reduce((sum, v) => sum + v.value, 0);
}

/** Moves a session's messages `seconds` into the past, as if the last model call were that old. */
async function age(id: string, seconds: number): Promise<void> {
  await api.database.database.pool.query(
    `update messages set created_at = created_at - make_interval(secs => $2) where session_pk = $1`,
    [await sessionPk(api, id), seconds],
  );
}

describe('cache-aware pruning after a finished turn', () => {
  it('a cache-aware session skips the after-turn prune that an identical cacheAware: false session runs', async () => {
    const model = { id: 'claude-sonnet-4-5' };
    await newSession(api, 'pc-aware', { model, policy: { pruning: prunesAnything } });
    await newSession(api, 'pc-unaware', {
      model,
      policy: { pruning: { ...prunesAnything, cacheAware: false } },
    });
    const skippedBefore = await skippedCount();

    const unaware = await post('pc-unaware', [system, question, toolTurn('call_1')]);
    expect(unaware.statusCode).toBe(201);
    const jobs = await pruneJobs('pc-unaware');
    expect(jobs).toHaveLength(1);
    expect(unaware.json().prune).toEqual({ jobId: jobs[0]!.id });

    const aware = await post('pc-aware', [system, question, toolTurn('call_1')]);
    expect(aware.statusCode).toBe(201);
    const { prune, status } = aware.json();
    expect(await pruneJobs('pc-aware')).toEqual([]);
    // The 20,000 cached tokens, less the pinned system prompt that leads the prompt (no prune
    // touches it), are written again at 3.75 $/M; the prune saves about 2,100 tokens a turn at
    // 0.3 $/M: far beyond the 10-turn horizon.
    expect(status.pinnedTokens).toBeGreaterThan(1_000);
    expect(prune).toEqual({
      jobId: null,
      skipped: 'cache_warm',
      cache: {
        invalidatedTokens: 20_000 - status.pinnedTokens,
        rewriteCostUsd: expect.any(Number),
        savingPerTurnUsd: expect.any(Number),
        breakEvenTurns: expect.any(Number),
      },
    });
    expect(prune.cache.rewriteCostUsd).toBeGreaterThan(0);
    expect(prune.cache.breakEvenTurns).toBeGreaterThan(10);
    expect(await skippedCount()).toBe(skippedBefore + 1);
    const skipped = (await publishedEvents('pc-aware')).filter((event) => event.type === 'prune.skipped');
    expect(skipped.map((event) => event.data)).toEqual([{ reason: 'cache_warm', cache: prune.cache }]);
    expect((await publishedEvents('pc-unaware')).map((event) => event.type)).not.toContain('prune.skipped');
  });

  it('runs the prune the cache would hold once the context is within its saving of the trigger', async () => {
    // The history the trigger counts (the pinned system prompt left out) is about 21,700 tokens:
    // the turn's report (a 21,000-token prompt) and the ~2,100-token output a prune could clear.
    // A trigger at 23,000 lies within that saving: the kept output is what would bring the
    // compaction on. One at 100,000 does not: the prune waits.
    const model = { id: 'claude-sonnet-4-5' };
    await newSession(api, 'pc-near', {
      model,
      policy: { pruning: prunesAnything, trigger: { kind: 'tokens', tokens: 23_000 } },
    });
    await newSession(api, 'pc-far', {
      model,
      policy: { pruning: prunesAnything, trigger: { kind: 'tokens', tokens: 100_000 } },
    });
    const near = await post('pc-near', [system, question, toolTurn('call_1')]);
    const history = near.json().status.tokens - near.json().status.pinnedTokens;
    expect(history).toBeLessThan(23_000);
    expect(history).toBeGreaterThan(21_000);
    expect(near.json().compaction).toBeNull();
    const jobs = await pruneJobs('pc-near');
    expect(jobs).toHaveLength(1);
    expect(near.json().prune).toEqual({ jobId: jobs[0]!.id });

    const far = await post('pc-far', [system, question, toolTurn('call_1')]);
    expect(far.json().prune).toMatchObject({ jobId: null, skipped: 'cache_warm' });
    expect(await pruneJobs('pc-far')).toEqual([]);
  });

  it('runs the prune once the cache expired (the last usage report older than the TTL)', async () => {
    await newSession(api, 'pc-expired', {
      model: { id: 'claude-sonnet-4-5' },
      policy: { pruning: prunesAnything },
    });
    const warm = await post('pc-expired', [system, question, toolTurn('call_1')]);
    expect(warm.json().prune).toMatchObject({ jobId: null, skipped: 'cache_warm' });
    // Anthropic's cache lives five minutes; the next turn (without a report of its own) comes later.
    await age('pc-expired', 301);
    const later = await post('pc-expired', [question, answer]);
    const jobs = await pruneJobs('pc-expired');
    expect(jobs).toHaveLength(1);
    expect(later.json().prune).toEqual({ jobId: jobs[0]!.id });
  });

  it("follows the session's cache override: a TTL of 0 never holds a prune back", async () => {
    await newSession(api, 'pc-ttl0', {
      model: { id: 'claude-sonnet-4-5', cache: { kind: 'explicit', ttlSeconds: 0 } },
      policy: { pruning: prunesAnything },
    });
    const response = await post('pc-ttl0', [system, question, toolTurn('call_1')]);
    expect(response.json().prune).toEqual({ jobId: (await pruneJobs('pc-ttl0'))[0]!.id });
  });

  it('runs the prune on gpt-4o, whose cache writes cost the input price: it pays within the horizon', async () => {
    await newSession(api, 'pc-gpt', { model: { id: 'gpt-4o' }, policy: { pruning: prunesAnything } });
    const response = await post('pc-gpt', [system, question, toolTurn('call_1')]);
    const jobs = await pruneJobs('pc-gpt');
    expect(jobs).toHaveLength(1);
    expect(response.json().prune).toEqual({ jobId: jobs[0]!.id });
  });

  it('the opencode preset prunes after every turn whatever the cache (its reference does)', async () => {
    await newSession(api, 'pc-opencode', {
      model: { id: 'claude-sonnet-4-5' },
      policy: { preset: 'opencode', pruning: prunesAnything },
    });
    const response = await post('pc-opencode', [system, question, toolTurn('call_1')]);
    expect(response.json().prune).toEqual({ jobId: (await pruneJobs('pc-opencode'))[0]!.id });
  });

  it('a manual prune always runs, warm cache or not', async () => {
    await newSession(api, 'pc-manual', {
      model: { id: 'claude-sonnet-4-5' },
      policy: { pruning: prunesAnything },
    });
    const warm = await post('pc-manual', [system, question, toolTurn('call_1')]);
    expect(warm.json().prune).toMatchObject({ skipped: 'cache_warm' });
    const manual = await api.request({ method: 'POST', url: '/v1/sessions/pc-manual/prune' });
    expect(manual.statusCode).toBe(202);
    expect(await pruneJobs('pc-manual')).toHaveLength(1);
  });
});
