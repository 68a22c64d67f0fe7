/**
 * Starting work after an append is best effort: the messages are committed first, and neither
 * a Redis that cannot take the job nor a failure to start the compaction at all fails the append.
 */
import { describe, expect, it } from 'vitest';
import { createApiJobs } from '../jobs';
import { useTestApi } from '../test-support/api';

const tiny = { id: 'tiny-model', contextWindow: 8_000, maxOutputTokens: 1_000 };
/** Over the usable 7,000: a stored history, and a report of it (which adds at most 1,750 over it). */
const crossing = [
  { role: 'user', parts: [{ type: 'text', text: ' word'.repeat(6_000) }] },
  { role: 'user', parts: [{ type: 'text', text: 'next?' }] },
  {
    role: 'assistant',
    parts: [{ type: 'text', text: 'done' }],
    finish: 'stop',
    usage: { input: 7_500, output: 1 },
  },
];

describe('when Redis refuses the job', () => {
  const api = useTestApi({
    jobs: (_jobs, { db, queues, publisher }) =>
      createApiJobs({
        db,
        queues: { ...queues, enqueue: () => Promise.reject(new Error('ECONNREFUSED')) },
        events: publisher,
        log: { info: () => undefined, warn: () => undefined },
        clock: () => new Date(),
      }),
  });

  it('the append succeeds with the compaction, left in the outbox for the reconciler', async () => {
    await api.request({ method: 'POST', url: '/v1/sessions', payload: { id: 'e-redis', model: tiny } });
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions/e-redis/messages',
      payload: { messages: crossing },
    });
    expect(response.statusCode).toBe(201);
    const { compaction } = response.json();
    expect(compaction).toMatchObject({ reason: 'auto', status: 'pending' });
    const { rows } = await api.database.database.pool.query(
      'select dispatched_at from outbox where job_id = $1',
      [compaction.id],
    );
    expect(rows).toEqual([{ dispatched_at: null }]);
    expect(await api.queues.queue('compact').getJob(compaction.id)).toBeUndefined();
  });
});

describe('when Redis does not answer at all', () => {
  const api = useTestApi({
    jobs: (_jobs, { db, queues, publisher }) =>
      createApiJobs(
        {
          db,
          queues: { ...queues, enqueue: () => new Promise<void>(() => undefined) },
          events: publisher,
          log: { info: () => undefined, warn: () => undefined },
          clock: () => new Date(),
        },
        { enqueueTimeoutMs: 50 },
      ),
  });

  it('the append does not wait for it', async () => {
    await api.request({ method: 'POST', url: '/v1/sessions', payload: { id: 'e-hang', model: tiny } });
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions/e-hang/messages',
      payload: { messages: crossing },
    });
    expect(response.statusCode).toBe(201);
    expect(response.json().compaction).toMatchObject({ reason: 'auto' });
  });
});

describe('when the compaction cannot be started at all', () => {
  const api = useTestApi({
    jobs: (jobs) => ({ ...jobs, startCompaction: () => Promise.reject(new Error('database is restarting')) }),
  });

  it('the append still succeeds, without a compaction', async () => {
    await api.request({ method: 'POST', url: '/v1/sessions', payload: { id: 'e-db', model: tiny } });
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions/e-db/messages',
      payload: { messages: crossing },
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ compaction: null, status: { activeCompaction: null } });
    const { rows } = await api.database.database.pool.query('select count(*)::int as n from messages');
    expect(rows[0].n).toBe(crossing.length);
  });
});
