/**
 * A compaction whose summarizer failed for good, completed by the policy's truncate fallback,
 * says so at top level: `fallback` on the compaction in the API, in its events, and in the
 * analyst views. Its strategy stays the one asked for.
 */
import { describe, expect, it } from 'vitest';
import { generateCodingSession } from '@compactor/testing/fixtures';
import type { SessionEvent } from '@compactor/workflow';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { useInProcessWorker } from '../test-support/in-process-worker';

const api = useTestApi();
const worker = useInProcessWorker(api);

/** Runs the compaction in this process as a worker would, on its last try, recording its events. */
async function runAsWorker(compactionId: string): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  await worker.run(compactionId, { events });
  return events;
}

describe('a compaction completed by the truncate fallback', () => {
  it('says so in the API, its events and the analytics views; one the LLM wrote does not', async () => {
    await newSession(api, 'fb-1');
    const appended = await api.request({
      method: 'POST',
      url: '/v1/sessions/fb-1/messages',
      payload: { messages: generateCodingSession({ turns: 2 }) },
    });
    expect(appended.statusCode, appended.body).toBe(201);
    const compact = () =>
      api.request({
        method: 'POST',
        url: '/v1/sessions/fb-1/compactions',
        payload: { keepRecentTokens: 500 },
      });

    const requested = (await compact()).json();
    worker.stub.setFaults({ status: 500 });
    const events = await runAsWorker(requested.id).finally(() => worker.stub.setFaults({}));

    const fallback = { code: 'llm_retries_exhausted', message: expect.any(String) };
    const shown = (await api.request({ method: 'GET', url: `/v1/compactions/${requested.id}` })).json();
    expect(shown).toMatchObject({ status: 'completed', strategy: 'summarize', error: null, fallback });
    const page = (await api.request({ method: 'GET', url: '/v1/sessions/fb-1/compactions' })).json();
    expect(page.compactions[0]).toMatchObject({ id: requested.id, fallback });
    const status = (await api.request({ method: 'GET', url: '/v1/sessions/fb-1' })).json();
    expect(status.status.lastCompaction).toMatchObject({ id: requested.id, fallback });

    const data = (type: string) => events.find((event) => event.type === type)?.data;
    expect(data('compaction.completed')).toMatchObject({ fallback: { code: 'llm_retries_exhausted' } });
    expect(data('session.compacted')).toMatchObject({ fallback: { code: 'llm_retries_exhausted' } });

    const { rows } = await api.database.database.pool.query(
      `select strategy, written_by, fallback_code, fallback_message from analytics.compactions
       where compaction_id = $1`,
      [requested.id],
    );
    expect(rows).toEqual([
      {
        strategy: 'summarize',
        written_by: 'truncate',
        fallback_code: 'llm_retries_exhausted',
        fallback_message: shown.fallback.message,
      },
    ]);

    // The next one is written by the LLM: no fallback anywhere.
    await api.request({
      method: 'POST',
      url: '/v1/sessions/fb-1/messages',
      payload: { messages: [{ role: 'user', parts: [{ type: 'text', text: 'And the tests?' }] }] },
    });
    const next = (await compact()).json();
    const nextEvents = await runAsWorker(next.id);
    const nextShown = (await api.request({ method: 'GET', url: `/v1/compactions/${next.id}` })).json();
    expect(nextShown).toMatchObject({ status: 'completed', fallback: null });
    expect(nextEvents.find((event) => event.type === 'compaction.completed')?.data).toMatchObject({
      fallback: null,
    });
    const daily = await api.database.database.pool.query(
      `select completed, fallbacks from analytics.daily where tenant_id = 'tenant-a'`,
    );
    expect(daily.rows).toEqual([{ completed: 2, fallbacks: 1 }]);
  });
});
