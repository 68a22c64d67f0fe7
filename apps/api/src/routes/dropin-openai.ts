import { chatCompletions, OpenAIUpstream } from '@compactor/gateway';
import type { ApiResources } from '../resources';
import { openAIErrorHandler } from '../http/dropin-errors';
import { dropInRoute, type DropInRouteOptions } from './dropin-route';

/**
 * `POST /v1/chat/completions`: OpenAI Chat Completions as a drop-in (an agent changes its base
 * URL and gets durable compaction). The gateway does the work; this maps the request on and the
 * answer back, a whole body or an event stream, and says every refusal in OpenAI's error shape.
 */
export function dropInOpenAIRoutes(resources: ApiResources, options: DropInRouteOptions) {
  return dropInRoute(resources, options, {
    path: '/v1/chat/completions',
    summary: 'OpenAI Chat Completions, with the session kept and compacted by Compactor',
    description:
      'Send the whole conversation each turn, as to OpenAI: the session is the `X-Compactor-Session` ' +
      "header, else the one whose history the messages continue. The provider gets the session's " +
      'served context instead of the messages; its answer comes back unchanged (streamed with ' +
      '`stream: true`). Headers: `X-Compactor-Session`, `X-Compactor-Fit`, `X-Compactor-Diverged-From` ' +
      '(a history that does not continue the stored one starts a new session), `X-Compactor-Replayed` ' +
      '(an identical retry answered from the store). The provider is offered a `recall` tool (unless ' +
      '`X-Compactor-Recall: false` created the session or the client has its own) whose calls Compactor ' +
      'answers itself: an image recalled by its `mediaId` follows the tool messages in a user message. ' +
      "Compactor's refusals are in OpenAI's error shape " +
      '(`{ error: { message, type, code } }`): 400 a body or header it cannot use (nothing is written), ' +
      '401 no key (`Authorization: Bearer` or `x-api-key`), 429 a cap, 503 no upstream configured. ' +
      "The provider's own errors, after two retries, come back with its status and body; an overflow " +
      'it reports is compacted away and retried once first. An answer that stops coming for ' +
      '`DROPIN_UPSTREAM_IDLE_MS` is a 504 (`upstream_idle`), or an `error` event ending a stream; nothing of it is stored.',
    errorHandler: openAIErrorHandler,
    upstream: (settings) => new OpenAIUpstream(settings),
    handle: chatCompletions,
  });
}
