import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  chatCompletions,
  OpenAIUpstream,
  type DropInResponder,
  type DropInSettings,
} from '@compactor/gateway';
import type { SessionMessages, TenantLimits } from '@compactor/sessions';
import { loggableError } from '@compactor/db';
import type { ApiResources } from '../resources';
import { openAIErrorHandler } from '../http/openai-errors';

/**
 * `POST /v1/chat/completions`: OpenAI Chat Completions as a drop-in (an agent changes its base
 * URL and gets durable compaction). The gateway does the work; this maps the request on and the
 * answer back, a whole body or an event stream, and says every refusal in OpenAI's error shape.
 */
export function dropInOpenAIRoutes(
  resources: ApiResources,
  options: { limits: TenantLimits; messages: SessionMessages; settings: DropInSettings },
) {
  return async (app: FastifyInstance): Promise<void> => {
    // Its own handler, also for what the hooks before it refuse (a missing key): an OpenAI SDK
    // reads `{ error: { message, type, code } }` and nothing else.
    app.setErrorHandler(openAIErrorHandler);
    const upstream = new OpenAIUpstream(options.settings);

    app.post(
      '/v1/chat/completions',
      {
        schema: {
          tags: ['drop-in'],
          summary: 'OpenAI Chat Completions, with the session kept and compacted by Compactor',
          description:
            'Send the whole conversation each turn, as to OpenAI: the session is the `X-Compactor-Session` ' +
            "header, else the one whose history the messages continue. The provider gets the session's " +
            'served context instead of the messages; its answer comes back unchanged (streamed with ' +
            '`stream: true`). Headers: `X-Compactor-Session`, `X-Compactor-Fit`, `X-Compactor-Diverged-From` ' +
            '(a history that does not continue the stored one starts a new session), `X-Compactor-Replayed` ' +
            "(an identical retry answered from the store). Compactor's refusals are in OpenAI's error shape " +
            '(`{ error: { message, type, code } }`): 400 a body or header it cannot use (nothing is written), ' +
            '401 no key (`Authorization: Bearer` or `x-api-key`), 429 a cap, 503 no upstream configured. ' +
            "The provider's own errors, after two retries, come back with its status and body; an overflow " +
            'it reports is compacted away and retried once first. An answer that stops coming for ' +
            '`DROPIN_UPSTREAM_IDLE_MS` is a 504 (`upstream_idle`), or an `error` event ending a stream; nothing of it is stored.',
        },
      },
      async (request, reply) => {
        const client = new AbortController();
        // The client going away before its answer is complete stops the upstream call.
        reply.raw.on('close', () => {
          if (!reply.raw.writableFinished) client.abort();
        });
        try {
          await chatCompletions(
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
