import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { createApiMetrics } from './metrics';

const api = useTestApi({
  server: {
    metrics: createApiMetrics({ queueCounts: async () => ({ compact: { waiting: 3, active: 1 } }) }),
  },
});

/** The value of one sample line of the exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /metrics', () => {
  it('counts requests by route pattern and status, never by id, and reports queue depth; no key needed', async () => {
    const created = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { id: 'ses-metrics-secret-id', model: { id: 'gpt-4o', provider: 'openai' } },
    });
    expect(created.statusCode).toBe(201);
    for (let i = 0; i < 2; i++) {
      expect(
        (await api.request({ method: 'GET', url: '/v1/sessions/ses-metrics-secret-id' })).statusCode,
      ).toBe(200);
    }
    expect((await api.request({ method: 'GET', url: '/v1/sessions/nope' })).statusCode).toBe(404);
    expect((await api.request({ method: 'GET', url: '/no/such/route' })).statusCode).toBe(404);

    const response = await api.request({ method: 'GET', url: '/metrics', key: null });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    const text = response.body;
    expect(
      sample(text, 'compactor_api_requests_total{method="POST",route="/v1/sessions",status="201"}'),
    ).toBe(1);
    expect(
      sample(text, 'compactor_api_requests_total{method="GET",route="/v1/sessions/:id",status="200"}'),
    ).toBe(2);
    expect(
      sample(text, 'compactor_api_requests_total{method="GET",route="/v1/sessions/:id",status="404"}'),
    ).toBe(1);
    expect(sample(text, 'compactor_api_requests_total{method="GET",route="unmatched",status="404"}')).toBe(1);
    expect(
      sample(text, 'compactor_api_request_duration_seconds_count{method="GET",route="/v1/sessions/:id"}'),
    ).toBe(3);
    expect(sample(text, 'compactor_queue_jobs{queue="compact",state="waiting"}')).toBe(3);
    expect(text).not.toContain('ses-metrics-secret-id');
    expect(text).toContain('compactor_api_process_cpu_seconds_total');
  });
});
