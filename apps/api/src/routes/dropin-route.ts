import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  answersStored,
  type DropInRequest,
  type DropInResponder,
  type DropInSettings,
  type GatewayDeps,
} from '@compactor/gateway';
import type { SessionMessages, TenantLimits } from '@compactor/sessions';
import { loggableError } from '@compactor/db';
import type { ApiResources } from '../resources';

/** What both drop-in routes are given by the server. */
export interface DropInRouteOptions {
  limits: TenantLimits;
  messages: SessionMessages;
  settings: DropInSettings;
}

/** One drop-in endpoint: its path and docs, the provider's error shape, and the gateway's handler. */
export interface DropInEndpoint<Upstream> {
  path: string;
  summary: string;
  description: string;
  /** Says every refusal, the hooks' before it included, in the provider's error shape. */
  errorHandler: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => unknown;
  upstream: (settings: DropInSettings) => Upstream;
  handle: (
    deps: GatewayDeps & { upstream: Upstream; settings: DropInSettings },
    request: DropInRequest,
    responder: DropInResponder,
  ) => Promise<void>;
}

/**
 * Registers a drop-in endpoint (an agent changes its base URL and gets durable compaction). The
 * gateway does the work; this maps the request on and the answer back, a whole body or an event
 * stream. Its own error handler: a provider's SDK reads its own error shape and nothing else.
 */
export function dropInRoute<Upstream>(
  resources: ApiResources,
  options: DropInRouteOptions,
  endpoint: DropInEndpoint<Upstream>,
) {
  return async (app: FastifyInstance): Promise<void> => {
    app.setErrorHandler(endpoint.errorHandler);
    // Answers are stored as the client gets them: the server ends once they are.
    app.addHook('onClose', () => answersStored());
    const upstream = endpoint.upstream(options.settings);

    app.post(
      endpoint.path,
      { schema: { tags: ['drop-in'], summary: endpoint.summary, description: endpoint.description } },
      async (request, reply) => {
        const client = new AbortController();
        // The client going away before its answer is complete stops the upstream call.
        reply.raw.on('close', () => {
          if (!reply.raw.writableFinished) client.abort();
        });
        try {
          await endpoint.handle(
            {
              resources,
              messages: options.messages,
              limits: options.limits,
              log: request.log,
              upstream,
              settings: options.settings,
            },
            {
              tenantId: request.tenantId,
              body: request.body,
              headers: request.headers,
              signal: client.signal,
            },
            responderFor(reply),
          );
        } catch (error) {
          if (!reply.raw.headersSent) throw error;
          // The stream had begun: the client got what there was; the fault goes to the log.
          request.log.error({ err: loggableError(error) }, 'drop-in stream failed');
        }
        return reply;
      },
    );
  };
}

/** Writes the answer through Fastify (a whole body) or straight to the socket (an event stream). */
function responderFor(reply: FastifyReply): DropInResponder {
  return {
    send(status, headers, body) {
      void reply.code(status).headers(headers).type('application/json').send(body);
    },
    startStream(headers) {
      reply.hijack();
      reply.raw.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      reply.raw.flushHeaders();
    },
    write(text) {
      if (!reply.raw.destroyed) reply.raw.write(text);
    },
    end() {
      if (!reply.raw.destroyed) reply.raw.end();
    },
  };
}
