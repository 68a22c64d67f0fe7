/**
 * `POST /v1/messages` as a drop-in: the client's whole conversation comes in, what is new of it
 * is stored, the provider gets the session's served context in its place, and its answer goes
 * back to the client as it came (streamed or whole) and is stored.
 */
import { anthropicAnswer, DropInInputError } from '@compactor/core';
import type { Message, MessageCreateParams, ToolUnion } from '@anthropic-ai/sdk/resources/messages';
import type { AnthropicServedContext } from './anthropic-context';
import { servedAnthropicContext } from './anthropic-context';
import { messageAsEvents } from './anthropic-replay';
import {
  anthropicUpstreamTools,
  recallCallsOf,
  runAnthropicSteps,
  type AnthropicStepPlan,
  type AnthropicStepResult,
} from './anthropic-steps';
import { relayAnthropicStep, type ClientSequence } from './anthropic-stream-relay';
import { anthropicError, type AnthropicUpstream } from './anthropic-upstream';
import type { GatewayDeps, SyncedConversation } from './conversation';
import {
  answerOrPassOnFailure,
  openConversation,
  sendReplay,
  storeAnswer,
  type AnswerHeaders,
  type DropInResponder,
} from './dropin-request';
import { elementMemos, memoScope } from './element-memos';
import { UpstreamFailure } from './errors';
import type { DropInRequest } from './openai-pipeline';
import { isRecallTool } from './recall-loop';
import { forwardedHeaders, headerValue, type RequestHeaders } from './request-headers';
import type { DropInSettings, UpstreamEndpoint } from './upstream-config';

export interface AnthropicDropInDeps extends GatewayDeps {
  upstream: AnthropicUpstream;
  settings: DropInSettings;
}

interface UpstreamTarget {
  endpoint: UpstreamEndpoint;
  signal: AbortSignal;
  headers: Record<string, string>;
}

type Headers = AnswerHeaders;

/**
 * Answers one request through `responder`. Compactor's refusals are thrown before anything is
 * written or sent (`DropInError`, core's `DropInInputError`, the sessions' errors); the
 * provider's are answered as the provider sent them.
 */
export async function anthropicMessages(
  deps: AnthropicDropInDeps,
  request: DropInRequest,
  responder: DropInResponder,
): Promise<void> {
  const body = messagesBody(request.body);
  const elements = elementMemos.anthropic(memoScope(request), body.system, body.messages);
  const { endpoint, conversation, context, headers } = await openConversation(
    deps,
    request,
    'anthropic',
    body.model,
    elements,
    (synced) =>
      servedAnthropicContext(deps, synced.session, deps.settings.compactionWaitMs, {
        session: synced.row,
        reading: synced.reading,
      }),
  );

  if (conversation.outcome === 'replayed' && conversation.replay) {
    const stored = conversation.replay.body as Message;
    const events = body.stream === true ? () => messageAsEvents(stored) : null;
    return sendReplay(responder, headers(context.fit), stored, events);
  }

  const { tools, recallOffered } = anthropicUpstreamTools(body.tools, conversation.recall);
  const plan: AnthropicStepPlan = {
    session: conversation.session,
    clientBody: body,
    context,
    toolsWithRecall: tools,
    recallOffered,
    waitMs: deps.settings.compactionWaitMs,
  };
  const call = { endpoint, signal: request.signal, headers: anthropicHeaders(request.headers) };
  await answerOrPassOnFailure(
    responder,
    () => headers(context.fit),
    request.signal,
    () =>
      body.stream === true
        ? streamed(deps, conversation, plan, call, responder, headers)
        : whole(deps, conversation, plan, call, responder, headers),
  );
}

async function whole(
  deps: AnthropicDropInDeps,
  conversation: SyncedConversation,
  plan: AnthropicStepPlan,
  call: UpstreamTarget,
  responder: DropInResponder,
  headers: Headers,
): Promise<void> {
  const { result, context } = await runAnthropicSteps(deps, plan, async (body, _context, offersRecall) => {
    const response = await deps.upstream.send(call.endpoint, body, call);
    const text = await response.text();
    const message = messageOf(text);
    return { message, recallCalls: offersRecall ? recallCallsOf(message.content) : [], text };
  });
  storeAnthropic(deps, conversation, result.message);
  responder.send(200, headers(context.fit), result.text);
}

async function streamed(
  deps: AnthropicDropInDeps,
  conversation: SyncedConversation,
  plan: AnthropicStepPlan,
  call: UpstreamTarget,
  responder: DropInResponder,
  headers: Headers,
): Promise<void> {
  let started = false;
  const sequence: ClientSequence = { messageStarted: false, nextIndex: 0 };
  const client = { write: (text: string) => responder.write(text) };
  // What the client was sent, step after step: its answer is one message made of these blocks.
  let first: Message | null = null;
  const sent: Message['content'] = [];
  try {
    const { result } = await runAnthropicSteps<
      AnthropicStepResult & { stop: string | null; complete: boolean }
    >(deps, plan, async (body, context: AnthropicServedContext, offersRecall) => {
      const response = await deps.upstream.send(call.endpoint, body, call);
      if (!started) responder.startStream(headers(context.fit));
      started = true;
      const step = await relayAnthropicStep(response, client, sequence, {
        holdToolUse: offersRecall,
        isHiddenTool: isRecallTool,
      });
      const message = step.message ?? emptyMessage();
      first ??= message;
      const blocks = step.sentBlocks.flatMap((index) =>
        message.content[index] ? [message.content[index]] : [],
      );
      sent.push(...blocks);
      const recallCalls = step.calledHidden ? recallCallsOf(message.content) : [];
      return { message, recallCalls, stop: step.stop, complete: step.message !== null };
    });
    if (result.complete)
      storeAnthropic(deps, conversation, { ...result.message, id: first!.id, content: sent });
    if (result.stop !== null) responder.write(result.stop);
    responder.end();
  } catch (error) {
    if (!started) throw error;
    // The status is sent: a failure after it is said in the stream, as Anthropic does.
    if (error instanceof UpstreamFailure)
      responder.write(`event: error\ndata: ${JSON.stringify(error.body)}\n\n`);
    responder.end();
    if (!(error instanceof UpstreamFailure)) throw error;
  }
}

/** A whole answer's Message; a body that is none is the provider's failure, not the client's. */
function messageOf(text: string): Message {
  try {
    const message = JSON.parse(text) as Message;
    if (message !== null && typeof message === 'object' && Array.isArray(message.content)) return message;
  } catch {
    // Not JSON: refused below.
  }
  throw new UpstreamFailure(
    502,
    anthropicError('api_error', 'the upstream provider answered with a body that is not a Message'),
    'the upstream answer is not a Message',
  );
}

/** A step whose stream was cut before its message was whole: nothing of it is stored. */
function emptyMessage(): Message {
  return { content: [] } as unknown as Message;
}

/** The client's provider headers, Anthropic's own (`anthropic-version`, `anthropic-beta`) besides. */
function anthropicHeaders(headers: RequestHeaders): Record<string, string> {
  const forwarded = forwardedHeaders(headers);
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = headerValue(headers, name);
    if (value !== undefined) forwarded[name] = value;
  }
  return forwarded;
}

/** The body's fields the pipeline reads, checked; every other field goes upstream as it came. */
function messagesBody(value: unknown): MessageCreateParams & { tools?: ToolUnion[] } {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new DropInInputError([], 'the body must be a JSON object');
  const body = value as Record<string, unknown>;
  if (typeof body['model'] !== 'string' || body['model'] === '')
    throw new DropInInputError(['model'], 'must be a non-empty string');
  const maxTokens = body['max_tokens'];
  if (typeof maxTokens !== 'number' || !Number.isSafeInteger(maxTokens) || maxTokens < 1)
    throw new DropInInputError(['max_tokens'], 'must be a positive integer');
  if (body['stream'] !== undefined && body['stream'] !== null && typeof body['stream'] !== 'boolean')
    throw new DropInInputError(['stream'], 'must be a boolean');
  const tools = body['tools'];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw new DropInInputError(['tools'], 'must be an array');
    tools.forEach((tool, i) => {
      if (tool === null || typeof tool !== 'object' || typeof (tool as { name?: unknown }).name !== 'string')
        throw new DropInInputError(['tools', i, 'name'], 'must be a string');
    });
  }
  return body as unknown as MessageCreateParams & { tools?: ToolUnion[] };
}

function storeAnthropic(deps: AnthropicDropInDeps, conversation: SyncedConversation, message: Message): void {
  storeAnswer(deps, conversation, anthropicAnswer(message), { protocol: 'anthropic', body: message });
}
