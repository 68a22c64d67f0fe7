import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { installErrorHandling } from './http/error-handler';
import type { ApiResources } from './resources';
import { compactionRoutes } from './routes/compactions';
import { contextRoutes } from './routes/context';
import { eventRoutes } from './routes/events';
import { healthRoutes } from './routes/health';
import { messageRoutes } from './routes/messages';
import { sessionRoutes } from './routes/sessions';
import { newId } from '@compactor/db';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on every /v1 route. */
    tenantId: string;
  }
}

export interface ServerOptions {
  logger?: FastifyBaseLogger | false;
  bodyLimit?: number;
  /** Interval of the `: keepalive` comment on event streams (default 15 s). */
  sseKeepaliveMs?: number;
}

/** Paths served without a key: probes and the API description. */
const PUBLIC_PREFIXES = ['/healthz', '/readyz', '/docs', '/openapi.json'];

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
    genReqId: () => newId('req'),
    ajv: { customOptions: { coerceTypes: false } },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);
  app.decorateRequest('tenantId', '');

  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: 'Compactor API',
        version: '1.0.0',
        description:
          'Stores LLM agent sessions, compacts them durably, and returns the exact context the model should see next.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Authenticate before the body is read, so an unauthenticated upload costs nothing.
  app.addHook('onRequest', async (request) => {
    if (
      PUBLIC_PREFIXES.some(
        (prefix) =>
          request.url === prefix ||
          request.url.startsWith(`${prefix}/`) ||
          request.url.startsWith(`${prefix}?`),
      )
    ) {
      return;
    }
    request.tenantId = await resources.auth.tenantFor(request.headers.authorization);
  });

  await app.register(healthRoutes(resources));
  await app.register(sessionRoutes(resources));
  await app.register(messageRoutes(resources));
  await app.register(contextRoutes(resources));
  await app.register(compactionRoutes(resources));
  await app.register(eventRoutes(resources, { keepaliveMs: options.sseKeepaliveMs }));
  await app.ready();
  return app;
}
