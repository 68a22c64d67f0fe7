import { classifyOverflow, type OverflowReport, type PolicyInput } from '@compactor/core';
import {
  findTenantCompaction,
  listCompactionSteps,
  listCompactionsPage,
  sessionModel,
  type Db,
} from '@compactor/db';
import { requestCompactionOnce, resolveStoredPolicy, type CompactionRequest } from '@compactor/workflow';
import type { Compaction, CreateCompactionInput } from '@compactor/contract';
import type { CompactionDetailAnswer, CompactionPageAnswer, OverflowAnswer } from './answers';
import { CompactionNotFound, InvalidInput } from './errors';
import type { SessionResources } from './resources';
import { requireSession, type SessionTarget } from './sessions';
import type { TenantLimits } from './tenant-limits';
import { compactionStepView, compactionView } from './views';

/**
 * `POST /v1/sessions/:id/compactions`: a manual compaction, or the active one (`created:
 * false`). With an `Idempotency-Key`, a repeat of the same request returns the compaction the
 * key created or joined, and the key with another body is db's `ConflictError` — neither writes anything
 * (workflow's `requestCompactionOnce`). Past the tenant's cap on active compactions, a request
 * that joins nothing is refused with `TenantLimitReached`.
 */
export async function requestManualCompaction(
  resources: SessionResources,
  limits: TenantLimits,
  target: SessionTarget,
  body: CreateCompactionInput,
  idempotencyKey: string | undefined,
): Promise<{ compaction: Compaction; created: boolean }> {
  const session = await requireSession(resources.db, target.tenantId, target.id);
  const model = sessionModel(session);
  const keep = body.keepRecentTokens;
  if (keep !== undefined && model.contextWindow > 0 && keep > model.contextWindow) {
    const message = `keepRecentTokens (${keep}) is larger than the session's context window (${model.contextWindow})`;
    throw new InvalidInput(message, [{ path: 'body.keepRecentTokens', message }]);
  }
  const request = {
    reason: 'manual' as const,
    strategy: body.strategy,
    keepRecentTokens: keep ?? null,
    instructions: body.instructions ?? null,
  };
  const start = (r: CompactionRequest) =>
    limits.requestedCompaction((caps) => resources.jobs.startCompaction(session, r, caps));
  const { compaction, created } = await (idempotencyKey === undefined
    ? start(request)
    : requestCompactionOnce(resources.db, session, { ...request, idempotencyKey }, start));
  return { compaction: compactionView(compaction, session.id), created };
}

/** `POST /v1/sessions/:id/prune`: a prune-only job for the session. */
export async function requestPrune(
  resources: SessionResources,
  target: SessionTarget,
): Promise<{ jobId: string }> {
  const session = await requireSession(resources.db, target.tenantId, target.id);
  return resources.jobs.startPrune(session, 'manual');
}

/**
 * `POST /v1/sessions/:id/overflow`: an overflow starts an emergency compaction (reason
 * `overflow`, force implied) unless the policy turned automatic compaction off; anything else
 * writes nothing. Past the tenant's cap on active compactions, an overflow that joins nothing
 * is refused with `TenantLimitReached`.
 */
export async function reportOverflow(
  resources: SessionResources,
  limits: TenantLimits,
  target: SessionTarget,
  report: OverflowReport,
): Promise<OverflowAnswer> {
  const session = await requireSession(resources.db, target.tenantId, target.id);
  const verdict = classifyOverflow(report, sessionModel(session));
  const answer = (compaction: Compaction | null) => ({
    overflow: verdict.kind !== null,
    kind: verdict.kind,
    matched: verdict.matched,
    compaction,
  });
  if (verdict.kind === null) return answer(null);
  const policy = resolveStoredPolicy(session.policy as PolicyInput);
  if (!policy.auto) return answer(null);
  // force is implied by the reason (keep recent = window / 5, no clean cut needed).
  const { compaction } = await limits.requestedCompaction((caps) =>
    resources.jobs.startCompaction(session, { reason: 'overflow' }, caps),
  );
  return answer(compactionView(compaction, session.id));
}

/** `GET /v1/sessions/:id/compactions`: a page of the session's compactions, newest first. */
export async function compactionsPage(
  db: Db,
  target: SessionTarget,
  { limit, before }: { limit: number; before?: string | undefined },
): Promise<CompactionPageAnswer> {
  const session = await requireSession(db, target.tenantId, target.id);
  // One more than asked says whether another page follows.
  const rows = await listCompactionsPage(db, session.pk, { limit: limit + 1, beforeId: before });
  if (rows === null) {
    const message = `before: ${before} is not a compaction of this session`;
    throw new InvalidInput(message, [{ path: 'querystring.before', message }]);
  }
  const page = rows.slice(0, limit);
  return {
    compactions: page.map((row) => compactionView(row, session.id)),
    nextBefore: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
  };
}

/** `GET /v1/compactions/:id`: one of the tenant's compactions, with its step attempts. */
export async function compactionDetail(
  db: Db,
  tenantId: string,
  compactionId: string,
): Promise<CompactionDetailAnswer> {
  const found = await findTenantCompaction(db, tenantId, compactionId);
  if (!found) throw new CompactionNotFound();
  const steps = await listCompactionSteps(db, found.compaction.id);
  return { ...compactionView(found.compaction, found.sessionId), steps: steps.map(compactionStepView) };
}
