/**
 * What both drop-in pipelines do alike around their provider's steps: find where the request
 * goes and which session it continues (writing what is new), the headers every answer carries,
 * a stored answer sent again for an identical retry, the provider's error passed on, and the
 * answer stored as the client gets it.
 */
import type { ConversationElement, DropInAnswer } from '@compactor/core';
import {
  recordAnswer,
  syncConversationWith,
  type GatewayDeps,
  type SyncedConversation,
} from './conversation';
import { DropInError, UpstreamFailure } from './errors';
import { conversationAnswersKey, pendingAnswers, tenantAnswersKey } from './pending-answers';
import { headerValue, overridesOf, sessionHeaderOf, type RequestHeaders } from './request-headers';
import {
  endpointFor,
  UPSTREAM_KEY_HEADER,
  type DropInSettings,
  type UpstreamEndpoint,
} from './upstream-config';

/** The client's response, written once: a whole answer, or an event stream. */
export interface DropInResponder {
  send(status: number, headers: Record<string, string>, body: string): void;
  /** Starts a 200 `text/event-stream` answer with these headers. */
  startStream(headers: Record<string, string>): void;
  write(text: string): void;
  end(): void;
}

/** The headers of an answer served from a context of this `fit`. */
export type AnswerHeaders = (fit: string) => Record<string, string>;

const UPSTREAM_SETTINGS = {
  openai:
    'no OpenAI-compatible upstream is configured for this tenant (UPSTREAM_OPENAI_BASE_URL or DROPIN_TENANT_UPSTREAMS_FILE)',
  anthropic:
    'no Anthropic upstream is configured for this tenant (UPSTREAM_ANTHROPIC_BASE_URL or DROPIN_TENANT_UPSTREAMS_FILE)',
} as const;

/**
 * Where the request goes and the conversation it continues, its new messages written, and its
 * served context (`readContext`). The upstream is checked first: a request that cannot be sent
 * anywhere writes nothing.
 */
export async function openConversation<C>(
  deps: GatewayDeps & { settings: DropInSettings },
  request: { tenantId: string; headers: RequestHeaders },
  protocol: 'openai' | 'anthropic',
  model: string,
  elements: ConversationElement[],
  readContext: (conversation: SyncedConversation) => Promise<C>,
): Promise<{
  endpoint: UpstreamEndpoint;
  conversation: SyncedConversation;
  context: C;
  headers: AnswerHeaders;
}> {
  const clientKey = headerValue(request.headers, UPSTREAM_KEY_HEADER);
  const endpoint = endpointFor(deps.settings, request.tenantId, protocol, clientKey);
  if (endpoint === null) throw new DropInError('upstream_not_configured', UPSTREAM_SETTINGS[protocol]);
  // The served context is read while the request's links are written.
  const { conversation, alongside: context } = await syncConversationWith(
    deps,
    {
      tenantId: request.tenantId,
      protocol,
      sessionHeader: sessionHeaderOf(request.headers),
      model,
      overrides: overridesOf(request.headers),
      elements,
    },
    readContext,
  );
  const headers: AnswerHeaders = (fit) => ({
    'x-compactor-session': conversation.session.id,
    ...(conversation.divergedFrom !== null ? { 'x-compactor-diverged-from': conversation.divergedFrom } : {}),
    'x-compactor-fit': fit,
  });
  return { endpoint, conversation, context, headers };
}

/** An identical retry answered from the store: the stored answer whole, or as its events. */
export function sendReplay(
  responder: DropInResponder,
  headers: Record<string, string>,
  stored: unknown,
  events: (() => Iterable<string>) | null,
): void {
  const replayed = { ...headers, 'x-compactor-replayed': 'true' };
  if (events === null) return responder.send(200, replayed, JSON.stringify(stored));
  responder.startStream(replayed);
  for (const event of events()) responder.write(event);
  responder.end();
}

/**
 * Runs the provider's steps; a failure the provider answered goes back as it sent it (its status,
 * `Retry-After` and body), unless the client has gone. Anything else is thrown.
 */
export async function answerOrPassOnFailure(
  responder: DropInResponder,
  headers: () => Record<string, string>,
  signal: AbortSignal,
  steps: () => Promise<void>,
): Promise<void> {
  try {
    await steps();
  } catch (error) {
    if (signal.aborted) return;
    if (!(error instanceof UpstreamFailure)) throw error;
    const answerHeaders = headers();
    if (error.retryAfter !== null) answerHeaders['retry-after'] = error.retryAfter;
    responder.send(error.status, answerHeaders, JSON.stringify(error.body));
  }
}

/**
 * Stores the answer the client is about to get, without the client waiting for it: the caller
 * sends the answer right after this returns. The store is registered first, so that the
 * conversation's next request in this process (sent only once the client has the answer) waits
 * for it ({@link pendingAnswers}). A failure to store is logged, not answered: the client has
 * its answer, and its next request, which echoes it, stores it as a client message instead.
 */
export function storeAnswer(
  deps: GatewayDeps,
  conversation: SyncedConversation,
  answer: DropInAnswer,
  raw: { protocol: 'openai' | 'anthropic'; body: unknown },
): void {
  if (conversation.outcome === 'replayed') return;
  const { tenantId } = conversation.session;
  const { conversationKey } = conversation.chain;
  const store = recordAnswer(deps, conversation, answer, raw).catch((error: unknown) => {
    deps.log.warn(
      { sessionId: conversation.session.id, err: { name: (error as Error).name } },
      'drop-in answer not stored',
    );
  });
  pendingAnswers.track(
    [
      tenantAnswersKey(tenantId),
      ...(conversationKey !== null ? [conversationAnswersKey(tenantId, conversationKey)] : []),
    ],
    store,
  );
}
