import {
  detectOverflowError,
  detectUsageOverflow,
  resolveStoredPolicy,
  type Finish,
  type ModelInfo,
  type PolicyInput,
  type Usage,
} from '@compactor/core';
import {
  findCompactionByIdempotencyKey,
  sessionModel,
  type CompactionRow,
  type SessionRow,
} from '@compactor/db';
import { ApiError, invalid } from '../http/errors';
import type { ApiResources } from '../resources';
import type { CreateCompactionInput } from '@compactor/contract';

/**
 * `POST /v1/sessions/:id/compactions`: a manual compaction, or the active one (`created:
 * false`). With an `Idempotency-Key`, a repeat of the same request returns the compaction the
 * key created, and the key with another body is a 409 — neither writes anything.
 */
export async function requestManualCompaction(
  resources: ApiResources,
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
  const policy = resolveStoredPolicy(session.policy as PolicyInput);
  /** Whether a stored compaction is what this request asks for (an omitted strategy is the policy's). */
  const sameRequest = (row: CompactionRow) =>
    row.reason === 'manual' &&
    row.keepRecentTokens === (keep ?? null) &&
    row.instructions === (body.instructions ?? null) &&
    row.strategy === (body.strategy ?? policy.strategy);
  const conflict = () =>
    new ApiError(409, 'conflict', 'this Idempotency-Key was used for a different request on this session');

  if (idempotencyKey !== undefined) {
    const earlier = await findCompactionByIdempotencyKey(resources.db, session.pk, idempotencyKey);
    if (earlier) {
      if (!sameRequest(earlier)) throw conflict();
      return { compaction: earlier, created: false };
    }
  }
  const result = await resources.jobs.startCompaction(session, {
    reason: 'manual',
    strategy: body.strategy,
    keepRecentTokens: keep ?? null,
    instructions: body.instructions ?? null,
    idempotencyKey: idempotencyKey ?? null,
  });
  // A concurrent request with the same key won the insert: the same rules apply to its row.
  if (
    !result.created &&
    idempotencyKey !== undefined &&
    result.compaction.idempotencyKey === idempotencyKey &&
    !sameRequest(result.compaction)
  ) {
    throw conflict();
  }
  return result;
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
 * writes nothing.
 */
export async function reportOverflow(
  resources: ApiResources,
  session: SessionRow,
  report: OverflowReport,
): Promise<{ kind: 'error' | 'usage' | null; matched: string | null; compaction: CompactionRow | null }> {
  const verdict = classifyOverflow(report, sessionModel(session));
  if (verdict.kind === null) return { ...verdict, compaction: null };
  const policy = resolveStoredPolicy(session.policy as PolicyInput);
  if (!policy.auto) return { ...verdict, compaction: null };
  // force is implied by the reason (keep recent = window / 5, no clean cut needed).
  const { compaction } = await resources.jobs.startCompaction(session, { reason: 'overflow' });
  return { ...verdict, compaction };
}
