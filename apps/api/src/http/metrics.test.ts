import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { buildMetricsServer, createApiMetrics } from './metrics';

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

const ownPortRegistry = createApiMetrics();
const ownPort = useTestApi({ server: { metrics: ownPortRegistry, metricsOnOwnPort: true } });

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

describe('GET /metrics on its own port (METRICS_PORT)', () => {
  it('is a 404 on the public server, which still records requests, and served by the metrics server alone', async () => {
    expect((await ownPort.request({ method: 'GET', url: '/healthz', key: null })).statusCode).toBe(200);
    const publicAnswer = await ownPort.request({ method: 'GET', url: '/metrics', key: null });
    expect(publicAnswer.statusCode).toBe(404);
    expect(publicAnswer.body).not.toContain('compactor_api_requests_total');
    const metricsServer = await buildMetricsServer(ownPortRegistry);
    try {
      const scraped = await metricsServer.inject({ method: 'GET', url: '/metrics' });
      expect(scraped.statusCode).toBe(200);
      expect(
        sample(scraped.body, 'compactor_api_requests_total{method="GET",route="/healthz",status="200"}'),
      ).toBe(1);
      expect((await metricsServer.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(404);
      expect((await metricsServer.inject({ method: 'GET', url: '/v1/sessions' })).statusCode).toBe(404);
    } finally {
      await metricsServer.close();
    }
  });
});
