import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  AnthropicUpstream,
  anthropicMessages,
  type DropInResponder,
  type DropInSettings,
} from '@compactor/gateway';
import type { SessionMessages, TenantLimits } from '@compactor/sessions';
import { loggableError } from '@compactor/db';
import type { ApiResources } from '../resources';
import { anthropicErrorHandler } from '../http/anthropic-errors';

/**
 * `POST /v1/messages`: Anthropic Messages as a drop-in (an agent changes its base URL and gets
 * durable compaction). The gateway does the work; this maps the request on and the answer back,
 * a whole body or an event stream, and says every refusal in Anthropic's error shape.
 */
export function dropInAnthropicRoutes(
  resources: ApiResources,
  options: { limits: TenantLimits; messages: SessionMessages; settings: DropInSettings },
) {
  return async (app: FastifyInstance): Promise<void> => {
    // Its own handler, also for what the hooks before it refuse (a missing key): an Anthropic SDK
    // reads `{ type: "error", error: { type, message } }` and nothing else.
    app.setErrorHandler(anthropicErrorHandler);
    const upstream = new AnthropicUpstream(options.settings);

    app.post(
      '/v1/messages',
      {
        schema: {
          tags: ['drop-in'],
          summary: 'Anthropic Messages, with the session kept and compacted by Compactor',
          description:
            'Send the whole conversation each turn, as to Anthropic (key in `x-api-key`): the session is the ' +
            "`X-Compactor-Session` header, else the one whose history the messages continue. The provider gets the session's " +
            'served context instead of `system` and `messages`; its answer comes back unchanged (streamed with ' +
            '`stream: true`), thinking blocks with their signatures. Headers: `X-Compactor-Session`, `X-Compactor-Fit`, ' +
            '`X-Compactor-Diverged-From` (a history that does not continue the stored one starts a new session), ' +
            "`X-Compactor-Replayed` (an identical retry answered from the store). Errors are in Anthropic's shape; " +
            'an answer that stops coming for `DROPIN_UPSTREAM_IDLE_MS` is a 504 `timeout_error`, or `event: error` ' +
            'ending a stream, and nothing of it is stored.',
        },
      },
      async (request, reply) => {
        const client = new AbortController();
        // The client going away before its answer is complete stops the upstream call.
        reply.raw.on('close', () => {
          if (!reply.raw.writableFinished) client.abort();
        });
        try {
          await anthropicMessages(
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
