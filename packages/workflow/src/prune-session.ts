import { PolicyError, reportedContextTokens, type CacheEffect, type PolicyInput } from '@compactor/core';
import {
  findLatestCompletedCompaction,
  findSessionByPk,
  insertPruneRun,
  markPrunedRecallable,
  pruneToolOutputs,
  selectCacheBaseline,
  selectCacheHead,
  type SessionRow,
} from '@compactor/db';
import { cacheEffectOfChange } from './cache-effect';
import { pruneByCharEstimate } from './prune-by-estimate';
import type { WorkflowResources } from './resources';
import { announceEvent } from './session-events';
import { resolveStoredPolicy } from './stored-policy';

/** What a prune job did; `skipped` says why it did nothing. */
export interface PruneSessionOutcome {
  parts: number;
  tokens: number;
  skipped: 'session-gone' | 'policy' | 'invalid-policy' | null;
  /** What the marks cost in prompt cache (recorded in `prune_runs`); absent when skipped. */
  cache?: CacheEffect;
}

/**
 * OpenCode's prune on its own (after a finished assistant turn, or `POST /prune`), over the
 * whole current view: selection (core's rule, in SQL) and marks in one statement, so no output
 * is loaded. Idempotent: already-pruned parts stop the selection, and a concurrent prune's marks
 * are not counted twice. Every job that ran is recorded in `prune_runs` with its prompt-cache
 * effect (docs/DESIGN.md, "Prompt cache").
 */
export async function pruneSession(
  resources: WorkflowResources,
  sessionPk: number,
  {
    jobId,
    trigger = 'manual',
    retry = false,
  }: {
    jobId: string;
    trigger?: 'turn' | 'manual';
    /** The queue runs this job again: an earlier try may have marked outputs and not flagged them. */
    retry?: boolean;
  },
): Promise<PruneSessionOutcome> {
  const session = await findSessionByPk(resources.db, sessionPk);
  if (!session) return { parts: 0, tokens: 0, skipped: 'session-gone' };
  let policy;
  try {
    policy = resolveStoredPolicy(session.policy as PolicyInput);
  } catch (error) {
    if (error instanceof PolicyError) return { parts: 0, tokens: 0, skipped: 'invalid-policy' };
    throw error;
  }
  if (!policy.prune) return { parts: 0, tokens: 0, skipped: 'policy' };
  const { parts, tokens, markedSeqs, savedTokens } =
    policy.tokenCount === 'chars'
      ? {
          ...(await pruneByCharEstimate(resources.db, session.pk, {
            coversThroughSeq: session.lastSeq,
            policy,
            at: resources.clock(),
            by: jobId,
          })),
          savedTokens: undefined,
        }
      : await pruneToolOutputs(resources.db, session.pk, {
          coversThroughSeq: session.lastSeq,
          pinSystemMessages: policy.pinSystemMessages,
          pruning: policy.pruning,
          at: resources.clock(),
          by: jobId,
        });
  const cache = await recordPruneRun(resources, session, {
    jobId,
    trigger,
    parts,
    tokens,
    savedTokens: parts > 0 ? savedTokens : undefined,
    pinSystemMessages: policy.pinSystemMessages,
  });
  if (resources.events) {
    await announceEvent(
      resources.events,
      resources.clock(),
      { session, compactionId: null },
      'prune.completed',
      { jobId, parts, tokens, cache },
    );
  }
  // Last: the cleared outputs go into recall's search index (their words are computed now, off
  // the append path and after the prune is announced), read where the statement marked. A query
  // meanwhile matches the newest marks not flagged yet without the index (db searchRecall), so a
  // marker served a moment ago is found by its words already.
  const flagRange = markedSeqs ?? (retry ? await keptRange(resources, session) : null);
  if (flagRange) await markPrunedRecallable(resources.db, session.pk, jobId, flagRange);
  return { parts, tokens, skipped: null, cache };
}

/**
 * Where an earlier try of a prune job may have left marks it did not flag (it stopped between
 * its statement and the flagging): the kept range of the view, from the latest boundary to the
 * newest message. A retry's own statement marks nothing there again (the walk stops at marks),
 * so it reads that range instead of the history.
 */
async function keptRange(
  resources: WorkflowResources,
  session: SessionRow,
): Promise<{ first: number; last: number }> {
  const latest = await findLatestCompletedCompaction(resources.db, session.pk);
  return { first: latest?.boundarySeq ?? 0, last: session.lastSeq };
}

/**
 * Records the job in `prune_runs`, with its cache effect (see {@link measurePruneRun}). Returns
 * the effect.
 */
async function recordPruneRun(
  resources: WorkflowResources,
  session: SessionRow,
  run: {
    jobId: string;
    trigger: 'turn' | 'manual';
    parts: number;
    tokens: number;
    /** What the view serves less for this run's marks, as the prune statement summed it. */
    savedTokens: number | undefined;
    pinSystemMessages: boolean;
  },
): Promise<CacheEffect> {
  const ranAt = resources.clock();
  const { tokensBefore, tokensAfter, cache } = await measurePruneRun(resources, session, run, ranAt);
  await insertPruneRun(resources.db, {
    jobId: run.jobId,
    sessionPk: session.pk,
    trigger: run.trigger,
    parts: run.parts,
    tokens: run.tokens,
    tokensBefore,
    tokensAfter,
    cache,
    ranAt,
  });
  return cache;
}

/**
 * The job's cache effect and the served context's size around its marks. The parts before the
 * first one it marked are served as they were; the provider caches at most what its latest usage
 * report measured, so the view is read only that far (db `selectCacheHead`), and the size is
 * that report's context plus what was stored after it, less what the marks saved. Without a
 * report nothing is cached, and the size is the view's stored sum; so is it when this run did
 * not sum its own marks (a retry that found them written, or the chars estimate).
 */
async function measurePruneRun(
  resources: WorkflowResources,
  session: SessionRow,
  run: { jobId: string; savedTokens: number | undefined; pinSystemMessages: boolean },
  ranAt: Date,
): Promise<{ tokensBefore: number; tokensAfter: number; cache: CacheEffect }> {
  const options = { pinSystemMessages: run.pinSystemMessages, prunedBy: run.jobId };
  const head =
    run.savedTokens === undefined ? null : await selectCacheHead(resources.db, session.pk, options);
  if (head?.report && run.savedTokens !== undefined) {
    const tokensBefore = reportedContextTokens(head.report.usage) + head.tokensAfterReport;
    const tokensAfter = Math.max(0, tokensBefore - run.savedTokens);
    // What the provider holds of the view: no more than the view served before the change.
    const cachedTokens = Math.min(head.report.cachedTokens, head.headTokens);
    const cache = cacheEffectOfChange(
      session,
      { lastUsage: { cachedTokens, at: head.report.at } },
      { tokensBefore, tokensAfter, unchangedPrefixTokens: head.prefixTokens ?? tokensBefore },
      ranAt,
    );
    return { tokensBefore, tokensAfter, cache };
  }
  const baseline = await selectCacheBaseline(resources.db, session.pk, options);
  const tokensAfter = baseline.storedTokens;
  const tokensBefore = tokensAfter + baseline.prunedSavedTokens;
  const cache = cacheEffectOfChange(
    session,
    baseline,
    { tokensBefore, tokensAfter, unchangedPrefixTokens: baseline.prefixTokens ?? tokensBefore },
    ranAt,
  );
  return { tokensBefore, tokensAfter, cache };
}
