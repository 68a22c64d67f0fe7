import { anthropicMessages, AnthropicUpstream } from '@compactor/gateway';
import type { ApiResources } from '../resources';
import { anthropicErrorHandler } from '../http/dropin-errors';
import { dropInRoute, type DropInRouteOptions } from './dropin-route';

/**
 * `POST /v1/messages`: Anthropic Messages as a drop-in (an agent changes its base URL and gets
 * durable compaction). The gateway does the work; this maps the request on and the answer back,
 * a whole body or an event stream, and says every refusal in Anthropic's error shape.
 */
export function dropInAnthropicRoutes(resources: ApiResources, options: DropInRouteOptions) {
  return dropInRoute(resources, options, {
    path: '/v1/messages',
    summary: 'Anthropic Messages, with the session kept and compacted by Compactor',
    description:
      'Send the whole conversation each turn, as to Anthropic (key in `x-api-key`): the session is the ' +
      "`X-Compactor-Session` header, else the one whose history the messages continue. The provider gets the session's " +
      'served context instead of `system` and `messages`; its answer comes back unchanged (streamed with ' +
      '`stream: true`), thinking blocks with their signatures. Headers: `X-Compactor-Session`, `X-Compactor-Fit`, ' +
      '`X-Compactor-Diverged-From` (a history that does not continue the stored one starts a new session), ' +
      '`X-Compactor-Replayed` (an identical retry answered from the store). The provider is offered a ' +
      '`recall` tool (unless `X-Compactor-Recall: false` created the session or the client has its own) ' +
      'whose calls Compactor answers itself: an image recalled by its `mediaId` comes back in the tool ' +
      "result. Errors are in Anthropic's shape; " +
      'an answer that stops coming for `DROPIN_UPSTREAM_IDLE_MS` is a 504 `timeout_error`, or `event: error` ' +
      'ending a stream, and nothing of it is stored.',
    errorHandler: anthropicErrorHandler,
    upstream: (settings) => new AnthropicUpstream(settings),
    handle: anthropicMessages,
  });
}
