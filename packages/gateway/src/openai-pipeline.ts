/**
 * `POST /v1/chat/completions` as a drop-in: the client's whole conversation comes in, what is
 * new of it is stored, the provider gets the session's served context in its place, and its
 * answer goes back to the client as it came (streamed or whole) and is stored.
 */
import { DropInInputError, openAIAnswer } from '@compactor/core';
import type { ChatCompletion, ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import type { GatewayDeps, SyncedConversation } from './conversation';
import {
  answerOrPassOnFailure,
  openConversation,
  sendReplay,
  storeAnswer,
  type DropInResponder,
} from './dropin-request';
import { elementMemos, memoScope } from './element-memos';
import { UpstreamFailure } from './errors';
import { relayStreamedStep, type RelayedStep } from './openai-stream-relay';
import { openAIError, type OpenAIUpstream } from './openai-upstream';
import { isRecallTool, upstreamTools } from './recall-loop';
import { completionAsEvents } from './replay-stream';
import { forwardedHeaders, type RequestHeaders } from './request-headers';
import { servedOpenAIContext, type ServedContext } from './served-context';
import { runSteps, type StepPlan, type StepResult } from './openai-steps';
import type { DropInSettings, UpstreamEndpoint } from './upstream-config';

export interface DropInDeps extends GatewayDeps {
  upstream: OpenAIUpstream;
  settings: DropInSettings;
}

export interface DropInRequest {
  tenantId: string;
  /** The parsed JSON body, unchecked. */
  body: unknown;
  headers: RequestHeaders;
  /** Fires when the client goes away: the upstream call is aborted. */
  signal: AbortSignal;
}

/**
 * Answers one request through `responder`. Compactor's refusals are thrown before anything is
 * written or sent (`DropInError`, core's `DropInInputError`, the sessions' errors); the
 * provider's are answered as the provider sent them.
 */
export async function chatCompletions(
  deps: DropInDeps,
  request: DropInRequest,
  responder: DropInResponder,
): Promise<void> {
  const body = chatBody(request.body);
  const elements = elementMemos.openAI(memoScope(request), body.messages);
  const { endpoint, conversation, context, headers } = await openConversation(
    deps,
    request,
    'openai',
    body.model,
    elements,
    (synced) =>
      servedOpenAIContext(deps, synced.session, deps.settings.compactionWaitMs, {
        session: synced.row,
        reading: synced.reading,
      }),
  );
  const clientWantsUsage = body.stream_options?.include_usage === true;

  if (conversation.outcome === 'replayed' && conversation.replay) {
    const stored = conversation.replay.body as ChatCompletion;
    const events = body.stream === true ? () => completionAsEvents(stored, clientWantsUsage) : null;
    return sendReplay(responder, headers(context.fit), stored, events);
  }

  const { tools, recallOffered } = upstreamTools(body.tools, conversation.recall);
  const plan: StepPlan = {
    session: conversation.session,
    clientBody:
      body.stream === true
        ? { ...body, stream_options: { ...body.stream_options, include_usage: true } }
        : body,
    context,
    toolsWithRecall: tools,
    recallOffered,
    waitMs: deps.settings.compactionWaitMs,
  };
  const call = { endpoint, signal: request.signal, headers: forwardedHeaders(request.headers) };
  await answerOrPassOnFailure(
    responder,
    () => headers(context.fit),
    request.signal,
    () =>
      body.stream === true
        ? streamed(deps, conversation, plan, call, responder, { clientWantsUsage, headers })
        : whole(deps, conversation, plan, call, responder, headers),
  );
}

interface UpstreamTarget {
  endpoint: UpstreamEndpoint;
  signal: AbortSignal;
  headers: Record<string, string>;
}

async function whole(
  deps: DropInDeps,
  conversation: SyncedConversation,
  plan: StepPlan,
  call: UpstreamTarget,
  responder: DropInResponder,
  headers: (fit: string) => Record<string, string>,
): Promise<void> {
  const { result, context } = await runSteps(deps, plan, async (body, _context, offersRecall) => {
    const response = await deps.upstream.send(call.endpoint, body, call);
    const text = await response.text();
    const completion = completionOf(text);
    const calls = offersRecall ? recallCallsOf(completion) : [];
    return { completion, recallCalls: calls, text };
  });
  storeOpenAI(deps, conversation, result.completion);
  responder.send(200, headers(context.fit), result.text);
}

async function streamed(
  deps: DropInDeps,
  conversation: SyncedConversation,
  plan: StepPlan,
  call: UpstreamTarget,
  responder: DropInResponder,
  options: { clientWantsUsage: boolean; headers: (fit: string) => Record<string, string> },
): Promise<void> {
  let started = false;
  let sentBefore = '';
  const client = { write: (text: string) => responder.write(text) };
  try {
    const { result } = await runSteps<RelayedStep & StepResult>(
      deps,
      plan,
      async (body, context, offersRecall) => {
        const response = await deps.upstream.send(call.endpoint, body, call);
        if (!started) responder.startStream(options.headers(context.fit));
        started = true;
        const step = await relayStreamedStep(response, new AbortController(), client, {
          holdToolCalls: offersRecall,
          forwardUsage: options.clientWantsUsage,
          isHiddenTool: isRecallTool,
        });
        if (step.hiddenCalls.length > 0) sentBefore += step.sentContent;
        return { ...step, recallCalls: step.hiddenCalls };
      },
    );
    storeOpenAI(deps, conversation, withLeadingText(result.completion, sentBefore));
    if (result.done !== null) responder.write(result.done);
    responder.end();
  } catch (error) {
    if (!started) throw error;
    // The status is sent: a failure after it is said in the stream, as providers do.
    if (error instanceof UpstreamFailure) responder.write(`data: ${JSON.stringify(error.body)}\n\n`);
    responder.end();
    if (!(error instanceof UpstreamFailure)) throw error;
  }
}

/** The text a client saw from steps asked again, ahead of the final step's own. */
function withLeadingText(completion: ChatCompletion, leading: string): ChatCompletion {
  if (leading === '') return completion;
  return {
    ...completion,
    choices: completion.choices.map((choice, i) =>
      i === 0
        ? { ...choice, message: { ...choice.message, content: leading + (choice.message.content ?? '') } }
        : choice,
    ),
  };
}

/** The provider's 2xx body as a completion; one that is none is the provider's fault, a 502. */
function completionOf(text: string): ChatCompletion {
  try {
    const completion = JSON.parse(text) as ChatCompletion;
    if (Array.isArray(completion?.choices)) return completion;
  } catch {
    // Said below.
  }
  throw new UpstreamFailure(
    502,
    openAIError(
      'the upstream provider answered with something that is not a chat completion',
      'api_error',
      'upstream_invalid_response',
    ),
    'upstream answer is not a chat completion',
  );
}

function recallCallsOf(completion: ChatCompletion) {
  return (completion.choices[0]?.message.tool_calls ?? []).flatMap((call) =>
    call.type === 'function' && isRecallTool(call.function.name) ? [call] : [],
  );
}

/** The body's fields the pipeline reads, checked; every other field goes upstream as it came. */
function chatBody(value: unknown): ChatCompletionCreateParams {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new DropInInputError([], 'the body must be a JSON object');
  const body = value as Record<string, unknown>;
  if (typeof body['model'] !== 'string' || body['model'] === '')
    throw new DropInInputError(['model'], 'must be a non-empty string');
  if (body['stream'] !== undefined && body['stream'] !== null && typeof body['stream'] !== 'boolean')
    throw new DropInInputError(['stream'], 'must be a boolean');
  if (body['tools'] !== undefined && !Array.isArray(body['tools']))
    throw new DropInInputError(['tools'], 'must be an array');
  const options = body['stream_options'];
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options)))
    throw new DropInInputError(['stream_options'], 'must be an object');
  return body as unknown as ChatCompletionCreateParams;
}

export type { ServedContext };

function storeOpenAI(deps: DropInDeps, conversation: SyncedConversation, completion: ChatCompletion): void {
  storeAnswer(deps, conversation, openAIAnswer(completion), { protocol: 'openai', body: completion });
}
