import { UnrecoverableError, type Job } from 'bullmq';
import { ZodError } from 'zod';
import { safeErrorMessage } from '@compactor/db';
import type { Llm } from '@compactor/llm';
import { retryAfterOf } from '../jobs/backoff';
import { parseJobPayload, type JobName } from '../jobs/catalog';
import {
  isAbort,
  prepareSummary,
  pruneSession,
  runCompaction,
  type PrepareSummaryOutcome,
  type PruneSessionOutcome,
  type WorkflowResources,
} from '@compactor/workflow';
import type { GatePlace, WorkGate } from './work-gate';
import { emitWorkerEvent, type CompactJobResult, type WorkerListeners } from './worker-events';

export type { CompactJobResult } from './worker-events';

/** Whether this run of `job` is the queue's last try (BullMQ counts failed tries in `attemptsMade`). */
export function isLastAttempt(job: Pick<Job, 'attemptsMade' | 'opts'>): boolean {
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}

/** A payload that does not parse can never succeed: fail the job now, without retries. */
function payloadOf<N extends JobName>(name: N, job: Job) {
  try {
    return parseJobPayload(name, job.data);
  } catch (error) {
    if (error instanceof ZodError) throw new UnrecoverableError(`invalid ${name} payload: ${error.message}`);
    throw error;
  }
}

/**
 * Runs one try of a compaction. The workflow records every failure it can decide on (the row
 * ends `failed`, the job completes); what comes out of here is a transient failure for BullMQ
 * to retry with backoff (Retry-After honoured by the backoff strategy), or a cancellation.
 * When the compaction ended (completed, skipped, failed), `compaction.ended` is reported and
 * awaited before the job completes (the worker starts the tenant's deferred compactions there).
 */
export function compactProcessor(resources: WorkflowResources, gate: WorkGate, listeners?: WorkerListeners) {
  return async (job: Job, _token?: string, signal?: AbortSignal): Promise<CompactJobResult> => {
    const { compactionId } = payloadOf('compact', job);
    const outcome = await inGate(gate, signal, job.opts.priority ?? 0, (place) =>
      runCompaction(
        { ...resources, llm: llmOutside(resources.llm, place), waitOutside: (wait) => place.outside(wait) },
        compactionId,
        { lastAttempt: isLastAttempt(job), signal },
      ),
    ).catch(forQueue);
    const endedNow = outcome.status !== 'inactive' && outcome.status !== 'stale';
    if (endedNow && outcome.compaction) {
      await emitWorkerEvent(listeners, 'compaction.ended', { compaction: outcome.compaction });
    }
    return {
      status: outcome.status,
      tokensBefore: outcome.compaction?.tokensBefore ?? null,
      tokensAfter: outcome.compaction?.tokensAfter ?? null,
    };
  };
}

/** Runs one prune job; one that ran (not skipped) is reported as `prune.ended` (metrics). */
export function pruneProcessor(resources: WorkflowResources, gate: WorkGate, listeners?: WorkerListeners) {
  return async (job: Job, _token?: string, signal?: AbortSignal): Promise<PruneSessionOutcome> => {
    const { sessionPk, reason } = payloadOf('prune', job);
    const outcome = await inGate(gate, signal, job.opts.priority ?? 0, () =>
      pruneSession(resources, sessionPk, {
        jobId: job.id ?? 'prune',
        trigger: reason,
        retry: job.attemptsMade > 0,
      }),
    ).catch(forQueue);
    if (outcome.cache) void emitWorkerEvent(listeners, 'prune.ended', { outcome });
    return outcome;
  };
}

/** A prepare job's rank in the gate: behind every compaction (their ranks are their tenant backlog's). */
export const PREPARE_GATE_RANK = Number.MAX_SAFE_INTEGER;

/**
 * Runs one prepare job (policy `prepare`): the session's summary written ahead of its trigger.
 * It waits in the gate behind every compaction, and its LLM call waits outside the gate, as a
 * compaction's does: a compaction never waits behind it for more than its database work.
 */
export function prepareProcessor(resources: WorkflowResources, gate: WorkGate) {
  return async (job: Job, _token?: string, signal?: AbortSignal): Promise<PrepareSummaryOutcome> => {
    const { sessionPk, draftId, headroomTokens } = payloadOf('prepare', job);
    return inGate(gate, signal, PREPARE_GATE_RANK, (place) =>
      prepareSummary({ ...resources, llm: llmOutside(resources.llm, place) }, sessionPk, draftId, {
        signal,
        headroomTokens: headroomTokens ?? 0,
      }),
    ).catch(forQueue);
  };
}

/**
 * Runs a job's work holding a place in the worker's gate, taken by the job's queue priority (a
 * compaction's rank in its tenant's backlog), then in arrival order.
 */
async function inGate<T>(
  gate: WorkGate,
  signal: AbortSignal | undefined,
  rank: number,
  work: (place: GatePlace) => Promise<T>,
): Promise<T> {
  const place = await gate.enter(signal, rank);
  try {
    return await work(place);
  } finally {
    place.leave();
  }
}

/** `llm` with every call made outside the job's place: an attempt waiting on the LLM holds none. */
export function llmOutside(llm: Llm, place: GatePlace): Llm {
  return {
    complete: (request) => place.outside(() => llm.complete(request)),
    summarize: (request) => place.outside(() => llm.summarize(request)),
    summarizeMessages: (input) => place.outside(() => llm.summarizeMessages(input)),
    summarizeSplitTurn: (input) => place.outside(() => llm.summarizeSplitTurn(input)),
    detectTopicBoundary: (request) => place.outside(() => llm.detectTopicBoundary(request)),
  };
}

/** A failure handed back to BullMQ for a retry: a safe message, and the provider's Retry-After. */
export class RetryableJobError extends Error {
  override readonly name = 'RetryableJobError';
  constructor(
    message: string,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }
}

/**
 * What BullMQ sees of a failure: BullMQ stores and logs the message, so a database error whose
 * message holds SQL parameters (message text) is replaced by its root cause's message.
 */
function forQueue(error: unknown): never {
  if (isAbort(error) || error instanceof UnrecoverableError) throw error;
  throw new RetryableJobError(safeErrorMessage(error), retryAfterOf(error));
}
