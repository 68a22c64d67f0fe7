import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { SESSION_DELETED_EVENT, SESSION_EVENT_TYPES, type SessionEvent } from '@compactor/workflow';
import { compareEventIds, EVENT_HISTORY, EVENT_ID_PATTERN } from '@compactor/queue';
import { ApiError, notFound } from '../http/errors';
import type { ApiResources } from '../resources';
import { ErrorBody, EventStreamText, SessionParams } from '@compactor/contract';
import { commonErrors } from '../http/route-errors';
import { requireSession } from '../services/sessions';
import type { TenantLimits } from '../services/tenant-limits';

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
  const id = event.id ? `id: ${event.id}\n` : '';
  return `${id}event: ${event.type}\ndata: ${JSON.stringify(payload)}\n\n`;
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
 * Redis pub/sub, so a client connected to any replica gets what every process publishes. Each
 * carries its id in the session's history: a client reconnecting with `Last-Event-ID` first gets
 * what it missed (what the history still holds), then the live events, none twice.
 */
export function eventRoutes(
  resources: ApiResources,
  { limits, keepaliveMs = 15_000 }: { limits: TenantLimits; keepaliveMs?: number | undefined },
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
            '`data: {"type","sessionId","compactionId","at","data"}`, each with an `id:`; a `: keepalive` comment every 15 s. ' +
            `Reconnecting with the \`Last-Event-ID\` header replays the events published since that one first (the session's last ${EVENT_HISTORY.length} events are kept for ${EVENT_HISTORY.ttlSeconds / 60} minutes after the newest). ` +
            '`session.compacted` carries the sizes, `fallback`, `continueWith` (the message to append, when the policy has one) and `followUp: { compactionId }` when messages appended while it ran left the session over its trigger: that compaction is already active, wait for it before the next model call. ' +
            '`session.deleted` is the last event of a deleted session: the stream ends after it (a reconnect is a 404). ' +
            'A tenant holding `TENANT_MAX_EVENT_STREAMS` streams open on one API process gets 429 `too_many_requests` ' +
            'with `Retry-After` for the next; a stream that ends, however it ends, frees its place.',
          params: SessionParams,
          response: {
            200: {
              description: 'The event stream',
              content: { 'text/event-stream': { schema: EventStreamText } },
            },
            ...commonErrors,
            429: ErrorBody,
            503: ErrorBody,
          },
        },
      },
      async (request, reply) => {
        // Taken before anything is looked up: a tenant past its cap costs no query or subscription.
        const release = limits.openEventStream(request.tenantId);
        try {
          return await stream(request, reply, release);
        } catch (error) {
          release();
          throw error;
        }
      },
    );

    /** The stream: `end`, however the stream ends, frees its place; a throw leaves that to the caller. */
    async function stream(
      request: FastifyRequest<{ Params: { id: string } }>,
      reply: FastifyReply,
      release: () => void,
    ): Promise<FastifyReply> {
      const session = await requireSession(resources.db, request.tenantId, request.params.id);
      const raw = reply.raw;
      // Live events wait in `pending` until the stream is open and the missed ones are sent.
      let started = false;
      let closed = false;
      const pendingEvents: Array<{ chunk: string; id: string | undefined; last: boolean }> = [];
      let keepalive: NodeJS.Timeout | undefined = undefined;
      let unsubscribe: (() => void) | undefined = undefined;

      const end = () => {
        if (closed) return;
        closed = true;
        clearInterval(keepalive);
        unsubscribe?.();
        open.delete(end);
        release();
        if (started && !raw.writableEnded) raw.end();
      };
      /** `last`: the session was deleted; the stream ends after this event. */
      const write = (chunk: string, id?: string, last = false) => {
        if (closed) return;
        if (!started) {
          pendingEvents.push({ chunk, id, last });
          return;
        }
        raw.write(chunk);
        if (last) end();
        else if (raw.writableLength > MAX_BUFFERED_BYTES) {
          request.log.warn({ sessionId: session.id }, 'event stream client is not reading; closing it');
          end();
        }
      };

      raw.on('close', end);
      // Subscribed before the stream opens: whatever happens after the client sees it is delivered.
      const subscription = await subscribeInTime(resources, session.pk, (event) =>
        write(formatSseEvent(event), event.id, event.type === SESSION_DELETED_EVENT),
      );
      // A delete that committed before the subscription was confirmed published its
      // `session.deleted` to nobody here: the session must still exist now.
      try {
        const current = await requireSession(resources.db, request.tenantId, session.id);
        if (current.pk !== session.pk) throw notFound('session');
      } catch (error) {
        subscription();
        throw error;
      }
      if (closed || raw.destroyed) {
        // The client left while Redis confirmed, or while the session was looked up.
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
      raw.write(': connected\n\n');
      const replayedUpTo = await replayMissed(
        resources,
        session.pk,
        request.headers['last-event-id'],
        (e) => {
          if (!closed) raw.write(formatSseEvent(e));
        },
      ).catch((error: unknown) => {
        request.log.warn(
          { sessionId: session.id, err: (error as Error).message },
          'event history unavailable',
        );
        return null;
      });
      started = true;
      for (const { chunk, id, last } of pendingEvents.splice(0)) {
        if (replayedUpTo === null || id === undefined || compareEventIds(id, replayedUpTo) > 0)
          write(chunk, id, last);
      }
      if (closed) return reply;
      keepalive = setInterval(() => write(': keepalive\n\n'), keepaliveMs);
      keepalive.unref();
      return reply;
    }
  };
}

/**
 * Sends what a reconnecting client missed: the events after its `Last-Event-ID` that the history
 * still holds. Returns the id of the last one sent (`null`: nothing to replay).
 */
async function replayMissed(
  resources: ApiResources,
  sessionPk: number,
  lastEventId: string | string[] | undefined,
  send: (event: SessionEvent) => void,
): Promise<string | null> {
  if (typeof lastEventId !== 'string' || !EVENT_ID_PATTERN.test(lastEventId)) return null;
  const missed = await resources.events.since(sessionPk, lastEventId);
  for (const event of missed) send(event);
  return missed.at(-1)?.id ?? lastEventId;
}
