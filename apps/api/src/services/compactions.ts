import {
  detectOverflowError,
  detectUsageOverflow,
  type Finish,
  type ModelInfo,
  type PolicyInput,
  type Usage,
} from '@compactor/core';
import { sessionModel, type CompactionRow, type SessionRow } from '@compactor/db';
import { requestCompactionOnce, resolveStoredPolicy, type CompactionRequest } from '@compactor/workflow';
import { invalid } from '../http/errors';
import type { ApiResources } from '../resources';
import type { TenantLimits } from './tenant-limits';
import type { CreateCompactionInput } from '@compactor/contract';

/**
 * `POST /v1/sessions/:id/compactions`: a manual compaction, or the active one (`created:
 * false`). With an `Idempotency-Key`, a repeat of the same request returns the compaction the
 * key created or joined, and the key with another body is a 409 — neither writes anything
 * (workflow's `requestCompactionOnce`). Past the tenant's cap on active compactions, a request
 * that joins nothing is a 429.
 */
export async function requestManualCompaction(
  resources: ApiResources,
  limits: TenantLimits,
  session: SessionRow,
  body: CreateCompactionInput,
  idempotencyKey: string | undefined,
): Promise<{ compaction: CompactionRow; created: boolean }> {
  const model = sessionModel(session);
  const keep = body.keepRecentTokens;
  if (keep !== undefined && model.contextWindow > 0 && keep > model.contextWindow) {
    const message = `keepRecentTokens (${keep}) is larger than the session's context window (${model.contextWindow})`;
    throw invalid(message, { issues: [{ path: 'body.keepRecentTokens', message }] });
  }
  const request = {
    reason: 'manual' as const,
    strategy: body.strategy,
    keepRecentTokens: keep ?? null,
    instructions: body.instructions ?? null,
  };
  const start = (r: CompactionRequest) =>
    limits.requestedCompaction((caps) => resources.jobs.startCompaction(session, r, caps));
  return idempotencyKey === undefined
    ? start(request)
    : requestCompactionOnce(resources.db, session, { ...request, idempotencyKey }, start);
}

/** What a client reports after a failed or suspicious turn (`POST /v1/sessions/:id/overflow`). */
export interface OverflowReport {
  error?: string | null | undefined;
  status?: number | null | undefined;
  body?: string | null | undefined;
  usage?: Usage | null | undefined;
  finish?: Finish | null | undefined;
}

/** The verdict on a report: a provider overflow error first, then a silent usage overflow. */
export function classifyOverflow(
  report: OverflowReport,
  model: ModelInfo,
): { kind: 'error' | 'usage' | null; matched: string | null } {
  if (report.error != null || report.status != null || report.body != null) {
    const detection = detectOverflowError({
      message: report.error ?? null,
      status: report.status ?? null,
      body: report.body ?? null,
    });
    if (detection.overflow) return { kind: 'error', matched: detection.matched };
  }
  if (report.usage && detectUsageOverflow(report.usage, model, report.finish ?? null)) {
    return { kind: 'usage', matched: 'reported prompt larger than the context window' };
  }
  return { kind: null, matched: null };
}

/**
 * `POST /v1/sessions/:id/overflow`: an overflow starts an emergency compaction (reason
 * `overflow`, force implied) unless the policy turned automatic compaction off; anything else
 * writes nothing. Past the tenant's cap on active compactions, an overflow that joins nothing
 * is a 429.
 */
export async function reportOverflow(
  resources: ApiResources,
  limits: TenantLimits,
  session: SessionRow,
  report: OverflowReport,
): Promise<{ kind: 'error' | 'usage' | null; matched: string | null; compaction: CompactionRow | null }> {
  const verdict = classifyOverflow(report, sessionModel(session));
  if (verdict.kind === null) return { ...verdict, compaction: null };
  const policy = resolveStoredPolicy(session.policy as PolicyInput);
  if (!policy.auto) return { ...verdict, compaction: null };
  // force is implied by the reason (keep recent = window / 5, no clean cut needed).
  const { compaction } = await limits.requestedCompaction((caps) =>
    resources.jobs.startCompaction(session, { reason: 'overflow' }, caps),
  );
  return { ...verdict, compaction };
}
