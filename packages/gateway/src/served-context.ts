/**
 * The context Compactor sends upstream in place of the client's messages: the session's served
 * context (made to fit; a running compaction waited for, bounded), and after an upstream
 * overflow, the context once the emergency compaction it starts has ended.
 */
import { detectOverflowError, type OpenAIChatMessage } from '@compactor/core';
import {
  reportOverflow,
  requireSession,
  sessionContext,
  waitForCompactionEnd,
  type ContextKnown,
  type SessionTarget,
} from '@compactor/sessions';
import type { ContextFitKind } from '@compactor/contract';
import type { GatewayDeps } from './conversation';
import type { UpstreamFailure } from './errors';

export interface ServedContext {
  messages: OpenAIChatMessage[];
  fit: ContextFitKind;
}

/**
 * The served context as Chat Completions messages (pinned system messages first). `known`: what
 * the request's own writes read of the session (`SyncedConversation.row` / `.reading`).
 */
export async function servedOpenAIContext(
  deps: GatewayDeps,
  session: SessionTarget,
  waitMs: number,
  known: ContextKnown = {},
): Promise<ServedContext> {
  const context = await sessionContext(
    deps.resources,
    session,
    { format: 'openai', fit: 'auto', waitMs },
    known,
  );
  return { messages: context.messages as OpenAIChatMessage[], fit: context.fit };
}

/** Whether the provider's refusal says the prompt did not fit its window (core's classifier). */
export function isOverflow(failure: UpstreamFailure): boolean {
  return detectOverflowError({
    message: failure.message,
    status: failure.status,
    body: JSON.stringify(failure.body),
  }).overflow;
}

/**
 * After an upstream overflow: reports it (an emergency compaction starts, unless the session's
 * policy turned automatic compaction off), waits `waitMs` at most for that compaction to end, and
 * reads the context again. Null when no compaction was started: the overflow stands.
 */
export async function contextAfterOverflow(
  deps: GatewayDeps,
  session: SessionTarget,
  failure: UpstreamFailure,
  waitMs: number,
): Promise<ServedContext | null> {
  const report = await reportOverflow(deps.resources, deps.limits, session, {
    error: failure.message,
    status: failure.status,
    body: JSON.stringify(failure.body),
  });
  if (!report.compaction) return null;
  const { pk } = await requireSession(deps.resources.db, session.tenantId, session.id);
  await waitForCompactionEnd(deps.resources, pk, report.compaction.id, waitMs);
  return servedOpenAIContext(deps, session, waitMs);
}

/**
 * After an upstream overflow, whatever the protocol: reports it and waits `waitMs` at most for
 * the emergency compaction it starts to end. False when no compaction was started (the session's
 * policy turned automatic compaction off): the overflow stands.
 */
export async function awaitEmergencyCompaction(
  deps: GatewayDeps,
  session: SessionTarget,
  failure: UpstreamFailure,
  waitMs: number,
): Promise<boolean> {
  const report = await reportOverflow(deps.resources, deps.limits, session, {
    error: failure.message,
    status: failure.status,
    body: JSON.stringify(failure.body),
  });
  if (!report.compaction) return false;
  const { pk } = await requireSession(deps.resources.db, session.tenantId, session.id);
  await waitForCompactionEnd(deps.resources, pk, report.compaction.id, waitMs);
  return true;
}
