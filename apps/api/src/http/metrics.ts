import type {} from '@fastify/swagger'; // its FastifySchema `hide` option
import Fastify, { type FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { TenantLimitObserver } from '@compactor/sessions';

/**
 * Jobs per queue and state, read at scrape time (the API's own view of the backlog), or `null`
 * when Redis did not answer in time.
 */
export type QueueCounts = () => Promise<Record<string, Record<string, number>> | null>;

/**
 * The API's Prometheus registry: process metrics, requests by route, tenant-limit refusals, open
 * event streams, and queue depth when given.
 */
export function createApiMetrics(
  options: { queueCounts?: QueueCounts; databaseBreakerOpen?: () => boolean } = {},
): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'compactor_api_' });
  new Counter({
    name: 'compactor_api_requests_total',
    help: 'HTTP requests answered, by method, route (the pattern, never the ids) and status code.',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  new Histogram({
    name: 'compactor_api_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route.',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new Counter({
    name: 'compactor_tenant_limit_rejections_total',
    help:
      'Requests answered 429 because their tenant was at a cap, by cap (event_streams, active_compactions, ' +
      'session_create_rate, tenant_requests). Never by tenant: tenants are unbounded.',
    labelNames: ['limit'],
    registers: [registry],
  });
  new Counter({
    name: 'compactor_auto_compactions_deferred_total',
    help:
      'Auto compactions deferred because their tenant was at TENANT_MAX_ACTIVE_COMPACTIONS ' +
      '(the append succeeded; the compaction starts when the tenant has room).',
    registers: [registry],
  });
  new Counter({
    name: 'compactor_prunes_skipped_total',
    help:
      "Finished turns' prunes that waited, by reason (cache_warm: the prompt cache is warm and the prune " +
      'would not repay it within pruning.cacheHorizonTurns; the next compaction prunes first).',
    labelNames: ['reason'],
    registers: [registry],
  });
  new Gauge({
    name: 'compactor_api_event_streams',
    help: 'Event streams this process holds open, over all tenants.',
    registers: [registry],
  });
  const { queueCounts, databaseBreakerOpen } = options;
  if (databaseBreakerOpen) {
    new Gauge({
      name: 'compactor_api_database_breaker_open',
      help: '1 while the database breaker refuses requests (a probe found Postgres not answering), else 0.',
      registers: [registry],
      collect() {
        this.set(databaseBreakerOpen() ? 1 : 0);
      },
    });
  }
  if (queueCounts) {
    new Gauge({
      name: 'compactor_queue_jobs',
      help: 'Jobs in each queue by state.',
      labelNames: ['queue', 'state'],
      registers: [registry],
      // Redis not answering: no queue series rather than stale ones (the other metrics still serve).
      async collect() {
        const counts = await queueCounts();
        this.reset();
        for (const [queue, states] of Object.entries(counts ?? {})) {
          for (const [state, count] of Object.entries(states)) this.set({ queue, state }, count);
        }
      },
    });
  }
  return registry;
}

/**
 * Records every answered request in `registry` and, unless `serve` is false (`METRICS_PORT`:
 * {@link buildMetricsServer} serves it on its own port), serves it at `GET /metrics`. The route
 * label is Fastify's route pattern (`/v1/sessions/:id`), so ids never become label values;
 * requests no route matched count as `unmatched`.
 */
export function registerMetrics(
  app: FastifyInstance,
  registry: Registry,
  { serve = true }: { serve?: boolean } = {},
): void {
  const requests = registry.getSingleMetric('compactor_api_requests_total') as Counter;
  const durations = registry.getSingleMetric('compactor_api_request_duration_seconds') as Histogram;
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    if (route === '/metrics') return;
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    durations.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  if (serve) serveMetrics(app, registry);
}

/**
 * A listener of its own for `GET /metrics` (`METRICS_PORT`), nothing else: Prometheus reaches
 * it inside the cluster while the public port, behind an ingress, does not show it.
 */
export async function buildMetricsServer(registry: Registry): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  serveMetrics(app, registry);
  await app.ready();
  return app;
}

function serveMetrics(app: FastifyInstance, registry: Registry): void {
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}

/** The tenant limits' reports, counted in `registry` (made by {@link createApiMetrics}). */
export function tenantLimitMetrics(registry: Registry): Required<TenantLimitObserver> {
  const rejections = registry.getSingleMetric('compactor_tenant_limit_rejections_total') as Counter;
  const deferred = registry.getSingleMetric('compactor_auto_compactions_deferred_total') as Counter;
  const streams = registry.getSingleMetric('compactor_api_event_streams') as Gauge;
  const prunesSkipped = registry.getSingleMetric('compactor_prunes_skipped_total') as Counter;
  return {
    pruneSkipped: (reason) => prunesSkipped.inc({ reason }),
    rejected: (limit) => rejections.inc({ limit }),
    autoCompactionDeferred: () => deferred.inc(),
    eventStreams: (open) => streams.set(open),
  };
}

/** Counts a request refused because its tenant's queue at the gate was full (`limit="tenant_requests"`). */
export function tenantGateRejections(registry: Registry): () => void {
  const rejections = registry.getSingleMetric('compactor_tenant_limit_rejections_total') as Counter;
  return () => rejections.inc({ limit: 'tenant_requests' });
}
