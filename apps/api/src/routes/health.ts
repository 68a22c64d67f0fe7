import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { pingDatabase } from '@compactor/db';
import type { ApiResources } from '../resources';

const PROBE_TIMEOUT_MS = 2000;

async function probe(check: () => Promise<unknown>): Promise<'ok' | string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
          PROBE_TIMEOUT_MS,
        );
      }),
    ]);
    return 'ok';
  } catch (error) {
    return (error as Error).message || 'unreachable';
  } finally {
    clearTimeout(timer);
  }
}

const Checks = z.object({ status: z.enum(['ok', 'unavailable']), checks: z.record(z.string(), z.string()) });

/** `/healthz`: the process is up. `/readyz`: Postgres and Redis answer, so traffic can come. */
export function healthRoutes(resources: ApiResources): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/healthz',
      { schema: { tags: ['operations'], response: { 200: z.object({ status: z.literal('ok') }) } } },
      async () => ({ status: 'ok' as const }),
    );
    app.get(
      '/readyz',
      { schema: { tags: ['operations'], response: { 200: Checks, 503: Checks } } },
      async (_req, reply) => {
        const [postgres, redis] = await Promise.all([
          probe(() => pingDatabase(resources.db)),
          probe(() => resources.redis.ping()),
        ]);
        const ready = postgres === 'ok' && redis === 'ok';
        return reply
          .code(ready ? 200 : 503)
          .send({ status: ready ? 'ok' : 'unavailable', checks: { postgres, redis } });
      },
    );
  };
}
