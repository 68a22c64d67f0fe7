import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { breakerOf, pingDatabase, safeErrorMessage } from '@compactor/db';
import { HealthOut, ReadinessOut } from '@compactor/contract';
import type { ApiResources } from '../resources';

const PROBE_TIMEOUT_MS = 2000;

/** What a probe says of a dependency, in plain words: never the driver's own message. */
type ProbeResult = 'ok' | 'not answering' | 'unreachable' | 'breaker open';

async function probe(
  check: () => Promise<unknown>,
  onFailure: (detail: string) => void,
): Promise<ProbeResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new ProbeTimeout()), PROBE_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch (error) {
    // The detail (addresses, driver errors) is for the operator's log, not for anonymous callers.
    onFailure(error instanceof ProbeTimeout ? error.message : safeErrorMessage(error));
    return error instanceof ProbeTimeout ? 'not answering' : 'unreachable';
  } finally {
    clearTimeout(timer);
  }
}

class ProbeTimeout extends Error {
  constructor() {
    super(`no answer within ${PROBE_TIMEOUT_MS} ms`);
  }
}

/**
 * `/healthz`: the process is up. `/readyz`: Postgres answers, so traffic can come. Redis is
 * probed and reported but does not gate: without it appends and reads still work (a job waits in
 * the outbox for the reconciler), only the event stream answers 503, and taking every replica
 * out of the load balancer during a Redis blip would fail all of that too. A failing dependency
 * is named with `unreachable` or `not answering` (Postgres also `breaker open`: the API refuses
 * its requests until a probe finds the server answering); its error goes to the log.
 */
export function healthRoutes(resources: ApiResources): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/healthz',
      { schema: { tags: ['operations'], summary: 'The process is up', response: { 200: HealthOut } } },
      async () => ({ status: 'ok' as const }),
    );
    app.get(
      '/readyz',
      {
        schema: {
          tags: ['operations'],
          summary: 'Postgres answers (503 if not); Redis is reported, not required',
          response: { 200: ReadinessOut, 503: ReadinessOut },
        },
      },
      async (request, reply) => {
        const failed = (dependency: string) => (detail: string) =>
          request.log.warn({ dependency, err: detail }, 'readiness probe failed');
        // While the breaker is open its own probes are the check: a ping would be refused anyway.
        const breakerOpen = breakerOf(resources.db.$client)?.isOpen === true;
        const [postgres, redis] = await Promise.all([
          breakerOpen
            ? ('breaker open' as const)
            : probe(() => pingDatabase(resources.db), failed('postgres')),
          probe(() => resources.redis.ping(), failed('redis')),
        ]);
        const ready = postgres === 'ok';
        return reply
          .code(ready ? 200 : 503)
          .send({ status: ready ? 'ok' : 'unavailable', checks: { postgres, redis } });
      },
    );
  };
}
