import { timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import { JOB_NAMES, type JobQueues } from '@compactor/queue';

/** Where ops find the queue dashboard (bull-board). */
export const QUEUE_DASHBOARD_PATH = '/admin/queues';

/**
 * Mounts bull-board on the queues at {@link QUEUE_DASHBOARD_PATH}, behind the operator token
 * (`ADMIN_TOKEN`): HTTP Basic with the token as password (the browser asks for it), or
 * `Authorization: Bearer <token>`. Tenant API keys never open it: the dashboard shows every
 * tenant's jobs and can retry or remove them.
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
  const expected = Buffer.from(options.adminToken);
  await app.register(
    async (dashboard) => {
      // bull-board brings its own routes and schemas: the API's zod compilers are not theirs.
      dashboard.setValidatorCompiler(() => () => true);
      dashboard.setSerializerCompiler(() => (data) => JSON.stringify(data));
      dashboard.addHook('onRequest', async (request, reply) => {
        if (!matches(tokenOf(request.headers.authorization), expected)) {
          reply
            .code(401)
            .header('www-authenticate', 'Basic realm="Compactor queues", charset="UTF-8"')
            .send({
              error: { code: 'unauthorized', message: 'the queue dashboard needs the operator token' },
            });
        }
      });
      await dashboard.register(serverAdapter.registerPlugin());
    },
    { prefix: QUEUE_DASHBOARD_PATH },
  );
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

function matches(given: string | null, expected: Buffer): boolean {
  if (given === null) return false;
  const buffer = Buffer.from(given);
  return buffer.length === expected.length && timingSafeEqual(buffer, expected);
}
