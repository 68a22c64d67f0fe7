/**
 * The upstream side of a Chat Completions request: the step sent with the served context, asked
 * again after Compactor answered its recall calls (at most `MAX_RECALL_ROUNDS` times), and sent
 * once more after an overflow the emergency compaction resolved. Whether a step is read whole or
 * relayed as a stream is the caller's `send`.
 */
import type { SessionTarget } from '@compactor/sessions';
import type {
  ChatCompletion,
  ChatCompletionCreateParams,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { GatewayDeps } from './conversation';
import { UpstreamFailure } from './errors';
import { MAX_RECALL_ROUNDS, recallExchange } from './recall-loop';
import { contextAfterOverflow, isOverflow, type ServedContext } from './served-context';

/** What one step came back with. */
export interface StepResult {
  completion: ChatCompletion;
  /** The recall calls it made; the step is asked again when there are any. */
  recallCalls: ChatCompletionMessageFunctionToolCall[];
}

export interface StepPlan {
  session: SessionTarget;
  /** The client's body: every field is sent as it came but `messages` (and `tools` with recall). */
  clientBody: ChatCompletionCreateParams;
  context: ServedContext;
  /** The client's tools and recall, sent on every round when `recallOffered`. */
  toolsWithRecall: ChatCompletionTool[] | undefined;
  recallOffered: boolean;
  waitMs: number;
}

/**
 * Runs the steps until one needs nothing more from Compactor; returns it with the context it
 * was answered from. An upstream failure that is no overflow, or a second overflow, is thrown.
 */
export async function runSteps<R extends StepResult>(
  deps: GatewayDeps,
  plan: StepPlan,
  send: (body: ChatCompletionCreateParams, context: ServedContext, offersRecall: boolean) => Promise<R>,
): Promise<{ result: R; context: ServedContext }> {
  let context = plan.context;
  const exchanges: ChatCompletionMessageParam[] = [];
  let overflowRetried = false;
  for (let round = 0; ;) {
    const offersRecall = plan.recallOffered && round < MAX_RECALL_ROUNDS;
    const tools = plan.recallOffered ? plan.toolsWithRecall : plan.clientBody.tools;
    const body: ChatCompletionCreateParams = {
      ...plan.clientBody,
      messages: [...(context.messages as ChatCompletionMessageParam[]), ...exchanges],
      ...(tools !== undefined ? { tools } : {}),
      // The last round keeps recall defined (the exchanges call it, and a provider may refuse a
      // call of a tool it is not given) and forbids every call instead.
      ...(plan.recallOffered && !offersRecall ? { tool_choice: 'none' as const } : {}),
    };
    let result: R;
    try {
      result = await send(body, context, offersRecall);
    } catch (error) {
      if (!(error instanceof UpstreamFailure) || overflowRetried || !isOverflow(error)) throw error;
      overflowRetried = true;
      const after = await contextAfterOverflow(deps, plan.session, error, plan.waitMs);
      if (after === null) throw error;
      context = after;
      continue;
    }
    if (!offersRecall || result.recallCalls.length === 0) return { result, context };
    const content = result.completion.choices[0]?.message.content ?? null;
    exchanges.push(...(await recallExchange(deps.resources.db, plan.session, content, result.recallCalls)));
    round += 1;
  }
}
