/**
 * The served context as an Anthropic Messages request: the session's context made to fit (a
 * running compaction waited for, bounded), rendered by core's `toAnthropicMessages` (pinned system
 * messages as `system`, turns alternating, tool_use/tool_result paired, thinking with its
 * signature), and after an upstream overflow, read again once the emergency compaction has ended.
 */
import { toAnthropicMessages, type AnthropicMessageParam, type Message } from '@compactor/core';
import { sessionContext, type ContextKnown, type SessionTarget } from '@compactor/sessions';
import type { ContextFitKind } from '@compactor/contract';
import type { GatewayDeps } from './conversation';
import type { UpstreamFailure } from './errors';
import { awaitEmergencyCompaction } from './served-context';

export interface AnthropicServedContext {
  system: string | undefined;
  messages: AnthropicMessageParam[];
  fit: ContextFitKind;
}

export async function servedAnthropicContext(
  deps: GatewayDeps,
  session: SessionTarget,
  waitMs: number,
  known: ContextKnown = {},
): Promise<AnthropicServedContext> {
  const context = await sessionContext(
    deps.resources,
    session,
    { format: 'native', fit: 'auto', waitMs },
    known,
  );
  const rendered = toAnthropicMessages({ messages: context.messages as Message[] });
  return { ...rendered, fit: context.fit };
}

/** The context after an overflow's emergency compaction; null when none was started (the overflow stands). */
export async function anthropicContextAfterOverflow(
  deps: GatewayDeps,
  session: SessionTarget,
  failure: UpstreamFailure,
  waitMs: number,
): Promise<AnthropicServedContext | null> {
  if (!(await awaitEmergencyCompaction(deps, session, failure, waitMs))) return null;
  return servedAnthropicContext(deps, session, waitMs);
}
