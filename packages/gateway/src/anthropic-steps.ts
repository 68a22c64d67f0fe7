/**
 * The upstream side of a Messages request: the step sent with the served context, asked again
 * after Compactor answered its recall calls (at most `MAX_RECALL_ROUNDS` times), and sent once
 * more after an overflow the emergency compaction resolved. Whether a step is read whole or
 * relayed as a stream is the caller's `send`.
 */
import { RECALL_TOOL } from '@compactor/contract';
import {
  MAX_MESSAGE_CACHE_BREAKPOINTS,
  withCacheBreakpoints,
  type AnthropicMessageParam,
} from '@compactor/core';
import type { SessionTarget } from '@compactor/sessions';
import type {
  ContentBlock,
  Message,
  MessageCreateParams,
  ToolUnion,
  ToolUseBlock,
} from '@anthropic-ai/sdk/resources/messages';
import { anthropicContextAfterOverflow, type AnthropicServedContext } from './anthropic-context';
import type { GatewayDeps } from './conversation';
import { UpstreamFailure } from './errors';
import { answerRecall, isRecallTool, MAX_RECALL_ROUNDS } from './recall-loop';
import { isOverflow } from './served-context';

/** What one step came back with. */
export interface AnthropicStepResult {
  message: Message;
  /** The recall calls it made; the step is asked again when there are any. */
  recallCalls: ToolUseBlock[];
}

export interface AnthropicStepPlan {
  session: SessionTarget;
  /** The client's body: every field is sent as it came but `system`, `messages` (and `tools` with recall). */
  clientBody: MessageCreateParams;
  context: AnthropicServedContext;
  /** The client's tools and recall, sent on every round when `recallOffered`. */
  toolsWithRecall: ToolUnion[] | undefined;
  recallOffered: boolean;
  waitMs: number;
}

/** Breakpoints on the newest user turns: this turn's prefix is written, the previous turn's read. */
const MESSAGE_BREAKPOINTS = 2;

/** The recall tool as Messages spells a tool. */
export const ANTHROPIC_RECALL_TOOL: ToolUnion = {
  name: RECALL_TOOL.function.name,
  description: RECALL_TOOL.function.description,
  input_schema: RECALL_TOOL.function.parameters as { type: 'object' },
};

/**
 * The tools sent upstream: the client's, plus recall when the session offers it and the client
 * has no tool of that name itself (then the calls are the client's to answer).
 */
export function anthropicUpstreamTools(
  clientTools: ToolUnion[] | undefined,
  offerRecall: boolean,
): { tools: ToolUnion[] | undefined; recallOffered: boolean } {
  const clientHasRecall = (clientTools ?? []).some((tool) => 'name' in tool && isRecallTool(tool.name));
  if (!offerRecall || clientHasRecall) return { tools: clientTools, recallOffered: false };
  return { tools: [...(clientTools ?? []), ANTHROPIC_RECALL_TOOL], recallOffered: true };
}

/**
 * Runs the steps until one needs nothing more from Compactor; returns it with the context it
 * was answered from. An upstream failure that is no overflow, or a second overflow, is thrown.
 */
export async function runAnthropicSteps<R extends AnthropicStepResult>(
  deps: GatewayDeps,
  plan: AnthropicStepPlan,
  send: (body: MessageCreateParams, context: AnthropicServedContext, offersRecall: boolean) => Promise<R>,
): Promise<{ result: R; context: AnthropicServedContext }> {
  let context = plan.context;
  const exchanges: AnthropicMessageParam[] = [];
  let overflowRetried = false;
  const { system: _system, messages: _messages, tools: clientTools, ...rest } = plan.clientBody;
  // Anthropic allows four breakpoints in all: the client's tools may hold some.
  const toolMarks = (clientTools ?? []).filter(
    (tool) => 'cache_control' in tool && tool.cache_control,
  ).length;
  const breakpoints = Math.min(MESSAGE_BREAKPOINTS, MAX_MESSAGE_CACHE_BREAKPOINTS - toolMarks);
  for (let round = 0; ;) {
    const offersRecall = plan.recallOffered && round < MAX_RECALL_ROUNDS;
    const tools = plan.recallOffered ? plan.toolsWithRecall : clientTools;
    const body = {
      ...rest,
      ...(context.system !== undefined ? { system: context.system } : {}),
      messages: withCacheBreakpoints([...context.messages, ...exchanges], breakpoints),
      ...(tools != null ? { tools } : {}),
      // The last round keeps recall defined (Anthropic refuses a tool_use of a tool it is not
      // given) and forbids every call instead; `none` is valid with extended thinking too.
      ...(plan.recallOffered && !offersRecall ? { tool_choice: { type: 'none' as const } } : {}),
    } as MessageCreateParams;
    let result: R;
    try {
      result = await send(body, context, offersRecall);
    } catch (error) {
      if (!(error instanceof UpstreamFailure) || overflowRetried || !isOverflow(error)) throw error;
      overflowRetried = true;
      const after = await anthropicContextAfterOverflow(deps, plan.session, error, plan.waitMs);
      if (after === null) throw error;
      context = after;
      continue;
    }
    if (!offersRecall || result.recallCalls.length === 0) return { result, context };
    exchanges.push(...(await recallExchange(deps, plan.session, result.message, result.recallCalls)));
    round += 1;
  }
}

/** The recall calls among a step's blocks. */
export function recallCallsOf(content: readonly ContentBlock[]): ToolUseBlock[] {
  return content.filter(
    (block): block is ToolUseBlock => block.type === 'tool_use' && isRecallTool(block.name),
  );
}

/**
 * The turns that continue the conversation after a step that called recall: the step's assistant
 * turn with its recall calls and without its other calls (it is asked again, and will make them
 * again if it still wants to), thinking kept as it came, then one user turn of the answers.
 */
async function recallExchange(
  deps: GatewayDeps,
  session: SessionTarget,
  message: Message,
  calls: ToolUseBlock[],
): Promise<AnthropicMessageParam[]> {
  const kept = message.content.filter((block) => block.type !== 'tool_use' || isRecallTool(block.name));
  const answers = await Promise.all(
    calls.map(async (call) => {
      const { text, image } = await answerRecall(
        deps.resources.db,
        session,
        JSON.stringify(call.input ?? {}),
      );
      // An image recalled by its media id comes back in the result, after its description.
      const content =
        image === null
          ? text
          : [
              { type: 'text' as const, text },
              {
                type: 'image' as const,
                source: { type: 'base64' as const, media_type: image.mime, data: image.data },
              },
            ];
      return { type: 'tool_result' as const, tool_use_id: call.id, content };
    }),
  );
  return [
    { role: 'assistant', content: kept.map((block) => asParam(block)) },
    { role: 'user', content: answers },
  ];
}

/** A response block as a request block: a `tool_use`'s answer-only fields left out, the rest as it came. */
function asParam(block: ContentBlock): AnthropicMessageParam['content'][number] {
  if (block.type === 'tool_use')
    return {
      type: 'tool_use',
      id: block.id,
      name: block.name,
      input: block.input as Record<string, unknown>,
    };
  if (block.type === 'text') return { type: 'text', text: block.text };
  return block as unknown as AnthropicMessageParam['content'][number];
}
