import type { PolicyInput } from '@compactor/core';
import {
  DEFAULT_RECALL_LIMIT,
  MAX_RECALL_EXCERPT_LENGTH,
  type RecallOutput,
  type RecallQuery,
  type RecallResponse,
  type RecallSearch,
} from '@compactor/contract';
import { findRecallCall, searchRecall, type Db } from '@compactor/db';
import { resolveStoredPolicy } from '@compactor/workflow';
import type { z } from 'zod';
import { CallNotFound, CallOutputPurged, InvalidInput } from './errors';
import { requireSession, type SessionTarget } from './sessions';

/**
 * `GET /v1/sessions/:id/recall`: what compaction took out of the model's view, given back. By
 * call id, the stored result of the call a cleared marker names (`CallOutputPurged` once
 * retention purged it);
 * by query, passages of the history the model no longer sees verbatim (see db `searchRecall`).
 * Another tenant's session is not found like a missing one, so its call ids and words find nothing.
 */
export async function recall(
  db: Db,
  target: SessionTarget,
  query: z.output<typeof RecallQuery>,
): Promise<RecallResponse> {
  const session = await requireSession(db, target.tenantId, target.id);
  if (query.callId !== undefined) return recallCall(db, session.pk, query.callId);
  if (query.q !== undefined) {
    const { pinSystemMessages } = resolveStoredPolicy(session.policy as PolicyInput);
    return recallSearch(db, session.pk, query.q, query.limit ?? DEFAULT_RECALL_LIMIT, pinSystemMessages);
  }
  // The contract's schema refuses this before it gets here.
  throw new InvalidInput('give exactly one of callId and q');
}

async function recallCall(db: Db, sessionPk: number, callId: string): Promise<RecallOutput> {
  const call = await findRecallCall(db, sessionPk, callId);
  if (!call) throw new CallNotFound();
  if (call.purgedAt !== null) {
    throw new CallOutputPurged(call.purgedAt);
  }
  return {
    kind: 'call',
    callId: call.callId,
    tool: call.tool,
    status: call.status,
    output: call.output,
    error: call.error,
    messageId: call.messageId,
    seq: call.seq,
    tokens: call.outputTokens,
    prunedAt: call.prunedAt?.toISOString() ?? null,
  };
}

async function recallSearch(
  db: Db,
  sessionPk: number,
  query: string,
  limit: number,
  pinSystemMessages: boolean,
): Promise<RecallSearch> {
  const results = await searchRecall(db, sessionPk, {
    query,
    limit,
    excerptChars: MAX_RECALL_EXCERPT_LENGTH,
    pinSystemMessages,
  });
  return { kind: 'search', query, results };
}
