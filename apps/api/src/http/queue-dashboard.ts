import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { errorHandler as boardErrorHandler } from '@bull-board/api/dist/handlers/error.js';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import { JOB_NAMES, type JobQueues } from '@compactor/queue';
import { ApiError } from './errors';
import { clientKey, FailureLimiter, type FailureLimitOptions } from './failure-limit';

/** Where ops find the queue dashboard (bull-board). */
export const QUEUE_DASHBOARD_PATH = '/admin/queues';

/**
 * Wrong operator tokens one client address may send before it is refused: 10 a minute, counted
 * from its first wrong one; then every request from it is a 429 until that minute ends. An
 * operator who mistypes a few times is not held up; a guesser gets 14,400 tries a day at most,
 * against a token of at least 16 characters. Per API process, in memory: N replicas allow N
 * times as many. Without a trusted proxy in front that passes the client's address, every
 * client behind one shares its address and its allowance.
 */
export const ADMIN_FAILURE_LIMIT: Omit<FailureLimitOptions, 'now'> = {
  maxFailures: 10,
  windowMs: 60_000,
  maxClients: 10_000,
};

/**
 * Mounts bull-board on the queues at {@link QUEUE_DASHBOARD_PATH}, behind the operator token
 * (`ADMIN_TOKEN`): HTTP Basic with the token as password (the browser asks for it), or
 * `Authorization: Bearer <token>`. Tenant API keys never open it: the dashboard shows every
 * tenant's jobs and can retry or remove them. Wrong tokens are limited per client address
 * ({@link ADMIN_FAILURE_LIMIT}).
 */
export async function registerQueueDashboard(
  app: FastifyInstance,
  options: { queues: JobQueues; adminToken: string },
): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: JOB_NAMES.map((name) => new BullMQAdapter(options.queues.queue(name))),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Compactor queues' } },
  });
  // bull-board answers every error it catches with a 500 unless it carries a `statusCode`; ours
  // carry their own status and code.
  serverAdapter.setErrorHandler((error): ReturnType<typeof boardErrorHandler> =>
    error instanceof ApiError
      ? {
          status: error.status as ReturnType<typeof boardErrorHandler>['status'],
          body: { error: { code: error.code, message: error.message } },
        }
      : boardErrorHandler(error),
  );
  const expected = digest(options.adminToken);
  const failures = new FailureLimiter(ADMIN_FAILURE_LIMIT);
  await app.register(
    async (dashboard) => {
      // bull-board brings its own routes and schemas: the API's zod compilers are not theirs.
      dashboard.setValidatorCompiler(() => () => true);
      dashboard.setSerializerCompiler(() => (data) => JSON.stringify(data));
      dashboard.addHook('onRequest', async (request, reply) => {
        const client = clientKey(request.ip);
        const retryAfter = failures.retryAfterSeconds(client);
        if (retryAfter > 0) {
          return reply
            .code(429)
            .header('retry-after', String(retryAfter))
            .send({
              error: {
                code: 'too_many_requests',
                message: `too many wrong operator tokens from this address; retry in ${retryAfter} s`,
              },
            });
        }
        const given = tokenOf(request.headers.authorization);
        if (given !== null && timingSafeEqual(digest(given), expected)) {
          failures.succeed(client);
          return;
        }
        if (given !== null && failures.fail(client)) {
          request.log.warn(
            { client, limit: ADMIN_FAILURE_LIMIT.maxFailures },
            'queue dashboard: too many wrong operator tokens; refusing this client for the rest of the window',
          );
        }
        return reply
          .code(401)
          .header('www-authenticate', 'Basic realm="Compactor queues", charset="UTF-8"')
          .send({
            error: { code: 'unauthorized', message: 'the queue dashboard needs the operator token' },
          });
      });
      dashboard.addHook('onSend', async (_request, reply, payload) =>
        typeof payload === 'string' && String(reply.getHeader('content-type')).startsWith('text/html')
          ? withoutExternalResources(payload)
          : payload,
      );
      await dashboard.register(serverAdapter.registerPlugin());
    },
    { prefix: QUEUE_DASHBOARD_PATH },
  );
}

/**
 * A `<link>` that loads from another origin: bull-board's page asks Google Fonts for its
 * typefaces, which would tell a third party who opens the dashboard and when, and fails on a
 * network without egress. Without it the page falls back to the system's sans-serif and monospace.
 */
const EXTERNAL_LINK = /<link\b[^>]*\bhref\s*=\s*["']?(?:[a-z][a-z0-9+.-]*:)?\/\/[^>]*>\s*/gi;

/** The dashboard's HTML without references to other origins (its own assets are relative). */
export function withoutExternalResources(html: string): string {
  return html.replace(EXTERNAL_LINK, '');
}

/**
 * Tokens are compared as SHA-256 digests: equal lengths whatever was sent, so neither the
 * comparison nor its length check says how long the token is or how much of it matched.
 */
function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The token of `Bearer <token>`, or the password of `Basic base64(user:password)`. */
function tokenOf(header: string | undefined): string | null {
  if (!header) return null;
  const [scheme, value = ''] = header.split(' ', 2);
  if (scheme?.toLowerCase() === 'bearer') return value;
  if (scheme?.toLowerCase() !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1);
}
