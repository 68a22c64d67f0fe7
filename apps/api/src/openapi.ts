import type { FastifyInstance } from 'fastify';
import type { ApiResources } from './resources';
import { buildServer, type ServerOptions } from './server';

/**
 * Resources for a server that is only asked for its description: any use is a bug, and says so
 * (building the routes touches none of them).
 */
function describeOnlyResources(): ApiResources {
  const refuse = (name: string) =>
    new Proxy(
      {},
      {
        get(_target, property) {
          throw new Error(`${name}.${String(property)}: this server only describes the API`);
        },
      },
    );
  return {
    db: refuse('db') as ApiResources['db'],
    redis: refuse('redis') as ApiResources['redis'],
    auth: refuse('auth') as ApiResources['auth'],
    tokenizerFor: () => refuse('tokenizer') as ReturnType<ApiResources['tokenizerFor']>,
    clock: () => new Date(0),
    jobs: refuse('jobs') as ApiResources['jobs'],
    events: refuse('events') as ApiResources['events'],
  };
}

/**
 * A server that can describe itself but serve nothing (no database, no Redis): what
 * `scripts/generate-api-docs.ts` and the OpenAPI test read `/openapi.json` from. Close it after use.
 */
export function buildDescribingServer(
  options: Pick<ServerOptions, 'onRoute'> = {},
): Promise<FastifyInstance> {
  return buildServer(describeOnlyResources(), options);
}

/** The OpenAPI document of the API, exactly as `GET /openapi.json` serves it. */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const app = await buildDescribingServer();
  try {
    return JSON.parse(JSON.stringify(app.swagger())) as Record<string, unknown>;
  } finally {
    await app.close();
  }
}
