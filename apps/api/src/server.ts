import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Level } from 'pino';
import type { Registry } from 'prom-client';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { clientErrorHandler, frameworkErrors, installErrorHandling } from './http/error-handler';
import type { ApiResources } from './resources';
import { compactionRoutes } from './routes/compactions';
import { contextRoutes } from './routes/context';
import { recallRoutes } from './routes/recall';
import { taskRoutes } from './routes/tasks';
import { mcpRoutes } from './routes/mcp';
import { eventRoutes } from './routes/events';
import { healthRoutes } from './routes/health';
import { acceptEmptyJsonBodies } from './http/empty-json-body';
import { registerMetrics, tenantGateRejections, tenantLimitMetrics } from './http/metrics';
import { openApiOptions } from './http/openapi-options';
import { QUEUE_DASHBOARD_PATH, registerQueueDashboard } from './http/queue-dashboard';
import { messageRoutes } from './routes/messages';
import { dropInOpenAIRoutes } from './routes/dropin-openai';
import { dropInAnthropicRoutes } from './routes/dropin-anthropic';
import { admitTenantsInTurn } from './http/tenant-gate-hooks';
import type { TenantGate } from './http/tenant-gate';
import type { LargeWrites, LargeWriteSettings } from './http/large-writes';
import { sessionRoutes } from './routes/sessions';
import { SessionMessages, TenantLimits, type TenantLimitSettings } from '@compactor/sessions';
import {
  DEFAULT_COMPACTION_WAIT_MS,
  DEFAULT_UPSTREAM_IDLE_MS,
  DEFAULT_UPSTREAM_MAX_RETRIES,
  DEFAULT_UPSTREAM_TIMEOUT_MS,
  type DropInSettings,
} from '@compactor/gateway';
import { MAX_CLIENT_ID_LENGTH } from '@compactor/contract';
import { loggableError, newId, runAsTenant } from '@compactor/db';
import type { JobQueues } from '@compactor/queue';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on every /v1 route. */
    tenantId: string;
  }
}

export interface ServerOptions {
  logger?: FastifyBaseLogger | false;
  /** The level of the one line each request logs when it completes (default `info`). */
  requestLogLevel?: Level;
  bodyLimit?: number;
  /** Fastify's `trustProxy`: whose `X-Forwarded-For` sets `request.ip` (env `TRUST_PROXY`; default none). */
  trustProxy?: boolean | string;
  /** Interval of the `: keepalive` comment on event streams (default 15 s). */
  sseKeepaliveMs?: number;
  /** Writes to one session queued in this process before a 429 (default 32). */
  sessionWriteQueueLimit?: number;
  /** Large appends (bodies of 1 MiB or more) held at once before a 429 (default 4). */
  largeAppendsInFlight?: number;
  /** Large appends at once and waiting, per process and per tenant (default `LARGE_WRITE_DEFAULTS`). */
  largeWrites?: LargeWrites | LargeWriteSettings | undefined;
  /**
   * Admits each tenant's requests a few at a time, the others waiting their turn; every request
   * runs at once when left out (`main.ts` makes one from `TENANT_REQUESTS_IN_FLIGHT`).
   */
  tenantGate?: TenantGate | undefined;
  /** Per-tenant caps (0: none); each left out is its default (`TENANT_LIMIT_DEFAULTS`). */
  tenantLimits?: Partial<TenantLimitSettings>;
  /**
   * Prometheus registry from `createApiMetrics`: requests and tenant-limit refusals are recorded
   * and `GET /metrics` serves it.
   */
  metrics?: Registry;
  /**
   * Record requests in `metrics` but leave `GET /metrics` to the listener on `METRICS_PORT`
   * (`buildMetricsServer`): it is a 404 here.
   */
  metricsOnOwnPort?: boolean;
  /** bull-board on these queues at /admin/queues, behind the operator token; off without one. */
  queueDashboard?: { queues: JobQueues; adminToken: string };
  /**
   * The drop-in endpoints' upstreams and waits (env `UPSTREAM_*`, `DROPIN_*`); without an
   * upstream, `POST /v1/chat/completions` answers 503.
   */
  dropIn?: Partial<DropInSettings>;
  /** Called for every route as Fastify registers it (the OpenAPI test lists them with it). */
  onRoute?: (route: { method: string | string[]; url: string }) => void;
}

/**
 * One log line per request, when it completes, carrying what Fastify's "incoming request" line
 * did (method and URL): at a few milliseconds an append, the second line was a measurable share
 * of the API's CPU.
 */
class OneLinePerRequest extends LogController {
  constructor(private readonly level: Level) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const fields = {
      req: { method: request.method, url: request.url },
      res: { statusCode: reply.statusCode },
      responseTime: reply.elapsedTime,
    };
    if (error) reply.log.error({ ...fields, err: loggableError(error) }, 'request errored');
    else reply.log[this.level](fields, 'request completed');
  }
}

/** Paths served without a key: probes and the API description. */
const PUBLIC_PREFIXES = ['/healthz', '/readyz', '/docs', '/openapi.json', '/metrics', QUEUE_DASHBOARD_PATH];

/**
 * The whole HTTP surface, built from explicit resources. Tests call this and use `inject` or
 * `listen({ port: 0 })`; `main.ts` adds env parsing, migrations and signals.
 */
export async function buildServer(
  resources: ApiResources,
  options: ServerOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: options.bodyLimit ?? 32 * 1024 * 1024,
    trustProxy: options.trustProxy ?? false,
    genReqId: () => newId('req'),
    logController: new OneLinePerRequest(options.requestLogLevel ?? 'info'),
    // Path parameters are client ids: the longest one creation accepts, every character
    // percent-encoded (three each), must still route (the default, 100, answered 414).
    routerOptions: { maxParamLength: 3 * MAX_CLIENT_ID_LENGTH },
    frameworkErrors,
    clientErrorHandler,
    ajv: { customOptions: { coerceTypes: false } },
  }).withTypeProvider<ZodTypeProvider>();

  if (options.onRoute) {
    const onRoute = options.onRoute;
    app.addHook('onRoute', (route) => onRoute({ method: route.method, url: route.url }));
  }
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);
  acceptEmptyJsonBodies(app);
  app.decorateRequest('tenantId', '');

  await app.register(fastifySwagger, openApiOptions);
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Authenticate before the body is read, so an unauthenticated upload costs nothing.
  app.addHook('onRequest', async (request, reply) => {
    // The route that matched, not the URL as sent: the router decodes the path
    // (`/admin/%71ueues` is the dashboard), and a public route's own hooks do its checks.
    const path = request.routeOptions.url ?? request.url;
    if (
      PUBLIC_PREFIXES.some(
        (prefix) => path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}?`),
      )
    ) {
      return;
    }
    request.tenantId = await resources.auth.tenantFor(
      request.headers.authorization,
      request.headers['x-api-key'],
    );
    // Every line of this request (the completion line included) says whose it is and what it is about.
    request.log = reply.log = request.log.child(requestIds(request));
  });

  // Each tenant's requests take their turns to run (after the body is read, before the handler).
  if (options.tenantGate) {
    admitTenantsInTurn(app, options.tenantGate, options.metrics && tenantGateRejections(options.metrics));
  }
  // The handler's statements, and whatever it leaves queued, wait for the pool as its tenant's
  // (a pool opened with `tenantShares` admits tenants in turn). Set as late as possible, so the
  // handler runs inside it: body parsing runs in the request stream's callbacks, whose async
  // context is not the hooks' (fastify's request-context plugin re-enters it for that reason).
  app.addHook('preHandler', (request, _reply, done) =>
    request.tenantId ? runAsTenant(request.tenantId, done) : done(),
  );

  if (options.metrics) registerMetrics(app, options.metrics, { serve: !options.metricsOnOwnPort });
  if (options.queueDashboard) await registerQueueDashboard(app, options.queueDashboard);
  const limits = new TenantLimits(
    options.tenantLimits,
    options.metrics ? tenantLimitMetrics(options.metrics) : undefined,
    () => resources.clock().getTime(),
  );
  await app.register(healthRoutes(resources));
  await app.register(sessionRoutes(resources, { limits }));
  // One per process: its per-session write queue orders the appends and the drop-in route's writes.
  const messages = new SessionMessages(resources, limits, {
    sessionWriteQueueLimit: options.sessionWriteQueueLimit,
    largeAppendsInFlight: options.largeAppendsInFlight,
  });
  app.addHook('onClose', () => messages.close());
  await app.register(messageRoutes(resources, { messages, largeWrites: options.largeWrites }));
  await app.register(
    dropInOpenAIRoutes(resources, { limits, messages, settings: dropInSettings(options.dropIn) }),
  );
  await app.register(
    dropInAnthropicRoutes(resources, { limits, messages, settings: dropInSettings(options.dropIn) }),
  );
  await app.register(contextRoutes(resources));
  await app.register(recallRoutes(resources));
  await app.register(taskRoutes(resources));
  await app.register(compactionRoutes(resources, { limits }));
  await app.register(eventRoutes(resources, { limits, keepaliveMs: options.sseKeepaliveMs }));
  await app.register(mcpRoutes(resources, { limits }));
  await app.ready();
  return app;
}

function dropInSettings(settings: Partial<DropInSettings> = {}): DropInSettings {
  return {
    openai: null,
    anthropic: null,
    tenantUpstreams: new Map(),
    passClientKey: false,
    compactionWaitMs: DEFAULT_COMPACTION_WAIT_MS,
    upstreamTimeoutMs: DEFAULT_UPSTREAM_TIMEOUT_MS,
    upstreamMaxRetries: DEFAULT_UPSTREAM_MAX_RETRIES,
    upstreamIdleMs: DEFAULT_UPSTREAM_IDLE_MS,
    ...settings,
  };
}

/** The tenant, and the session or compaction the route names (client ids, never message text). */
function requestIds(request: FastifyRequest): Record<string, string> {
  const { id } = request.params as { id?: string };
  const route = request.routeOptions.url ?? '';
  if (id !== undefined && route.startsWith('/v1/sessions/:id'))
    return { tenantId: request.tenantId, sessionId: id };
  if (id !== undefined && route.startsWith('/v1/compactions/:id'))
    return { tenantId: request.tenantId, compactionId: id };
  return { tenantId: request.tenantId };
}
