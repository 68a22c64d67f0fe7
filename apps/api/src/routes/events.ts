import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SESSION_EVENT_TYPES, type SessionEvent } from '@compactor/queue';
import { ApiError } from '../http/errors';
import type { ApiResources } from '../resources';
import { commonErrors, ErrorBody, SessionParams } from '../schemas/common';
import { requireSession } from '../services/sessions';

/** A client that stops reading is cut off once this much is waiting for it. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** How long the event stream waits for Redis to confirm the subscription. */
const SUBSCRIBE_TIMEOUT_MS = 5000;

/** One event on the wire: `event: <type>` and the JSON (its session's public id, never its key). */
export function formatSseEvent(event: SessionEvent): string {
  const payload = {
    type: event.type,
    sessionId: event.sessionId,
    compactionId: event.compactionId,
    at: event.at,
    data: event.data,
  };
  return `event: ${event.type}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** Subscribes, or throws a 503 when Redis does not confirm in time (and drops a late subscription). */
async function subscribeInTime(
  resources: ApiResources,
  sessionPk: number,
  listener: (event: SessionEvent) => void,
): Promise<() => void> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  const subscribed = resources.events.subscribe(sessionPk, listener);
  subscribed.then(
    (unsubscribe) => late && unsubscribe(),
    () => undefined,
  );
  try {
    return await Promise.race([
      subscribed,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(new ApiError(503, 'service_unavailable', 'the event stream is unavailable (Redis)'));
        }, SUBSCRIBE_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    late = true;
    if (error instanceof ApiError) throw error;
    throw new ApiError(503, 'service_unavailable', 'the event stream is unavailable (Redis)');
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `GET /v1/sessions/:id/events`: the session's events as Server-Sent Events. Events travel over
 * Redis pub/sub, so a client connected to any replica gets what every process publishes.
 */
export function eventRoutes(
  resources: ApiResources,
  { keepaliveMs = 15_000 }: { keepaliveMs?: number | undefined } = {},
): FastifyPluginAsyncZod {
  return async (app) => {
    /** Open streams, ended when the server closes (they would hold `close()` forever). */
    const open = new Set<() => void>();
    app.addHook('preClose', async () => {
      for (const end of [...open]) end();
    });

    app.get(
      '/v1/sessions/:id/events',
      {
        schema: {
          tags: ['events'],
          summary: "The session's events (Server-Sent Events)",
          description:
            `\`text/event-stream\`: \`event: <type>\` (${SESSION_EVENT_TYPES.join(', ')}) and ` +
            '`data: {"type","sessionId","compactionId","at","data"}`; a `: keepalive` comment every 15 s.',
          params: SessionParams,
          response: {
            200: z.string().describe('text/event-stream'),
            ...commonErrors,
            503: ErrorBody,
          },
        },
      },
      async (request, reply) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        const raw = reply.raw;
        let started = false;
        let closed = false;
        const pending: string[] = [];
        let keepalive: NodeJS.Timeout | undefined = undefined;
        let unsubscribe: (() => void) | undefined = undefined;

        const end = () => {
          if (closed) return;
          closed = true;
          clearInterval(keepalive);
          unsubscribe?.();
          open.delete(end);
          if (started && !raw.writableEnded) raw.end();
        };
        const write = (chunk: string) => {
          if (closed) return;
          if (!started) {
            pending.push(chunk);
            return;
          }
          raw.write(chunk);
          if (raw.writableLength > MAX_BUFFERED_BYTES) {
            request.log.warn({ sessionId: session.id }, 'event stream client is not reading; closing it');
            end();
          }
        };

        raw.on('close', end);
        // Subscribed before the stream opens: whatever happens after the client sees it is delivered.
        const subscription = await subscribeInTime(resources, session.pk, (event) =>
          write(formatSseEvent(event)),
        );
        if (closed || raw.destroyed) {
          // The client left while Redis confirmed.
          subscription();
          end();
          return reply.hijack();
        }
        unsubscribe = subscription;
        reply.hijack();
        open.add(end);
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        started = true;
        raw.write(': connected\n\n');
        for (const chunk of pending.splice(0)) write(chunk);
        keepalive = setInterval(() => write(': keepalive\n\n'), keepaliveMs);
        keepalive.unref();
        return reply;
      },
    );
  };
}
