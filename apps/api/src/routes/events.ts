import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { SESSION_EVENT_TYPES, type SessionEvent } from '@compactor/workflow';
import { EVENT_HISTORY } from '@compactor/queue';
import { openSessionEvents, type SessionEventStream, type TenantLimits } from '@compactor/sessions';
import type { ApiResources } from '../resources';
import { ErrorBody, EventStreamText, SessionParams } from '@compactor/contract';
import { commonErrors } from '../http/route-errors';

/** A client that stops reading is cut off once this much is waiting for it. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

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

/**
 * `GET /v1/sessions/:id/events`: the session's events as Server-Sent Events. Events travel over
 * Redis pub/sub, so a client connected to any replica gets what every process publishes. What
 * is sent, in which order (replay after `Last-Event-ID`, then live, none twice, ending after
 * `session.deleted`) is `openSessionEvents`'s; this writes it out, keeps the connection alive and
 * cuts off a client that stops reading.
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
      const raw = reply.raw;
      let started = false;
      let closed = false;
      let keepalive: NodeJS.Timeout | undefined = undefined;
      let events: SessionEventStream | undefined = undefined;

      const end = () => {
        if (closed) return;
        closed = true;
        clearInterval(keepalive);
        events?.close();
        open.delete(end);
        release();
        if (started && !raw.writableEnded) raw.end();
      };
      const write = (chunk: string) => {
        if (closed) return;
        raw.write(chunk);
        if (raw.writableLength > MAX_BUFFERED_BYTES) {
          request.log.warn(
            { sessionId: request.params.id },
            'event stream client is not reading; closing it',
          );
          end();
        }
      };

      raw.on('close', end);
      // Subscribed before the stream opens: whatever happens after the client sees it is delivered.
      const opened = await openSessionEvents(
        resources,
        { tenantId: request.tenantId, id: request.params.id },
        { lastEventId: request.headers['last-event-id'], log: request.log },
      );
      if (closed || raw.destroyed) {
        // The client left while Redis confirmed, or while the session was looked up.
        opened.close();
        end();
        return reply.hijack();
      }
      events = opened;
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
      keepalive = setInterval(() => write(': keepalive\n\n'), keepaliveMs);
      keepalive.unref();
      void (async () => {
        for await (const event of opened) write(formatSseEvent(event));
      })()
        .catch((error: unknown) =>
          request.log.error(
            { sessionId: request.params.id, err: (error as Error).message },
            'event stream failed',
          ),
        )
        // Ended by `session.deleted`, or by `end` itself.
        .finally(end);
      return reply;
    }
  };
}
