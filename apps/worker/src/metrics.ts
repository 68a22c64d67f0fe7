import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { cacheEffectOf } from '@compactor/db';
import type { ChatCompleter } from '@compactor/llm';
import type { WorkflowObserver } from '@compactor/workflow';
import { queueCounts, type JobQueues, type WorkerEventMap, type WorkerListener } from '@compactor/queue';

/** The worker's Prometheus metrics; queue depths are read from Redis at scrape time. */
export interface WorkerMetrics {
  readonly registry: Registry;
  jobEnded: WorkerListener<'job.ended'>;
  reconciled: WorkerListener<'reconciler.passed'>;
  /** A compaction that ended for good: its outcome, fallback, pruned and saved tokens. */
  compactionEnded(payload: WorkerEventMap['compaction.ended']): void;
  /** A prune job that ran: its prompt-cache effect. */
  pruneEnded: WorkerListener<'prune.ended'>;
  /** Steps as the workflow reports them. */
  readonly observer: Required<WorkflowObserver>;
  /** The same completer, timing every LLM request and counting its tokens and cost. */
  metered(completer: ChatCompleter): ChatCompleter;
}

/** A change's prompt-cache effect, as rows record it. */
type CacheEffect = NonNullable<ReturnType<typeof cacheEffectOf>>;

const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** The process's jobs as its metrics read them at scrape time. */
export interface JobGauges {
  active(): number;
  queued(): number;
}

export function createWorkerMetrics(queues: JobQueues, jobs: JobGauges): WorkerMetrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: 'compactor_worker_' });
  const jobSeconds = new Histogram({
    name: 'compactor_job_duration_seconds',
    help: 'Duration of one job try, by queue and outcome (completed, skipped, failed, inactive, stale, error).',
    labelNames: ['queue', 'outcome'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const stepSeconds = new Histogram({
    name: 'compactor_step_duration_seconds',
    help: "Duration of one compaction step's work (prune, summarize, finalize), by outcome.",
    labelNames: ['step', 'outcome'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const compactions = new Counter({
    name: 'compactor_compactions_total',
    help: 'Compactions that ended for good, by reason (auto, manual, overflow), strategy and status.',
    labelNames: ['reason', 'strategy', 'status'],
    registers,
  });
  const fallbacks = new Counter({
    name: 'compactor_compaction_fallbacks_total',
    help:
      'Completed compactions whose summary the truncate fallback wrote (the summarizer failed for good), ' +
      'by the failure code.',
    labelNames: ['code'],
    registers,
  });
  const tokensSaved = new Counter({
    name: 'compactor_tokens_saved_total',
    help: 'Context tokens removed by completed compactions (tokens before − tokens after).',
    registers,
  });
  const prunedTokens = new Counter({
    name: 'compactor_pruned_tokens_total',
    help: 'Tool-output tokens cleared by the prune step of ended compactions.',
    registers,
  });
  const cacheInvalidated = new Counter({
    name: 'compactor_cache_invalidated_tokens_total',
    help: 'Provider-cached prompt tokens that completed compactions and prune jobs changed (the next prompt writes them again), by kind (compaction, prune).',
    labelNames: ['kind'],
    registers,
  });
  const cacheRewriteCost = new Counter({
    name: 'compactor_cache_rewrite_cost_usd_total',
    help: 'Estimated USD the next prompt after completed compactions and prune jobs cost more for the cache they broke, by kind (models with a known price).',
    labelNames: ['kind'],
    registers,
  });
  const cacheEffect = (kind: 'compaction' | 'prune', effect: CacheEffect) => {
    cacheInvalidated.inc({ kind }, effect.invalidatedTokens);
    if (effect.rewriteCostUsd !== null) cacheRewriteCost.inc({ kind }, effect.rewriteCostUsd);
  };
  const llmSeconds = new Histogram({
    name: 'compactor_llm_request_duration_seconds',
    help: 'Duration of one LLM request, by model and outcome (ok, or the error class).',
    labelNames: ['model', 'outcome'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const llmTokens = new Counter({
    name: 'compactor_llm_tokens_total',
    help: 'Tokens of answered LLM requests, by model and kind (input, output).',
    labelNames: ['model', 'kind'],
    registers,
  });
  const llmCost = new Counter({
    name: 'compactor_llm_cost_usd_total',
    help: 'Estimated USD cost of answered LLM requests, by model (models the price table knows).',
    labelNames: ['model'],
    registers,
  });
  const reconciled = new Counter({
    name: 'compactor_reconciler_actions_total',
    help: 'Reconciler actions: outbox entries dispatched, compactions re-enqueued or abandoned, drafts whose job is gone retired, deferred compactions started.',
    labelNames: ['action'],
    registers,
  });
  new Gauge({
    name: 'compactor_worker_active_jobs',
    help: 'Jobs this process is running now.',
    registers,
    collect() {
      this.set(jobs.active());
    },
  });
  new Gauge({
    name: 'compactor_worker_step_queue_jobs',
    help:
      'Jobs of this process waiting for a place to do their database and CPU work (WORKER_STEP_CONCURRENCY). ' +
      'High for long: the process is CPU- or database-bound; add processes rather than concurrency.',
    registers,
    collect() {
      this.set(jobs.queued());
    },
  });
  new Gauge({
    name: 'compactor_queue_jobs',
    help: 'Jobs in each queue by state (the autoscaling signal: waiting + delayed).',
    labelNames: ['queue', 'state'],
    registers,
    // Redis not answering: no queue series rather than stale ones (the other metrics still serve).
    async collect() {
      const counts = await queueCounts(queues);
      this.reset();
      for (const [queue, states] of Object.entries(counts ?? {})) {
        for (const [state, count] of Object.entries(states)) this.set({ queue, state }, count);
      }
    },
  });
  return {
    registry,
    jobEnded({ queue, outcome, durationMs }) {
      jobSeconds.observe({ queue, outcome }, durationMs / 1000);
    },
    reconciled({ report }) {
      if (report.dispatched) reconciled.inc({ action: 'dispatched' }, report.dispatched);
      if (report.redriven) reconciled.inc({ action: 'redriven' }, report.redriven);
      if (report.abandoned) reconciled.inc({ action: 'abandoned' }, report.abandoned);
      if (report.draftsRetired) reconciled.inc({ action: 'draft_retired' }, report.draftsRetired);
      if (report.deferredStarted) reconciled.inc({ action: 'deferred_started' }, report.deferredStarted);
    },
    compactionEnded({ compaction: row }) {
      compactions.inc({ reason: row.reason, strategy: row.strategy, status: row.status });
      if (row.fallbackCode !== null) fallbacks.inc({ code: row.fallbackCode });
      prunedTokens.inc(row.prunedTokens);
      if (row.status === 'completed' && row.tokensBefore !== null && row.tokensAfter !== null) {
        tokensSaved.inc(Math.max(0, row.tokensBefore - row.tokensAfter));
      }
      const cache = cacheEffectOf(row);
      if (cache) cacheEffect('compaction', cache);
    },
    pruneEnded({ outcome }) {
      if (outcome.cache) cacheEffect('prune', outcome.cache);
    },
    observer: {
      stepEnded(step, outcome, durationMs) {
        stepSeconds.observe({ step, outcome }, durationMs / 1000);
      },
    },
    metered(completer) {
      return {
        async complete(request) {
          const started = performance.now();
          try {
            const result = await completer.complete(request);
            llmSeconds.observe({ model: request.model, outcome: 'ok' }, (performance.now() - started) / 1000);
            llmTokens.inc({ model: request.model, kind: 'input' }, result.usage.promptTokens);
            llmTokens.inc({ model: request.model, kind: 'output' }, result.usage.completionTokens);
            if (result.costUsd !== null) llmCost.inc({ model: request.model }, result.costUsd);
            return result;
          } catch (error) {
            const outcome = error instanceof Error ? error.name : 'error';
            llmSeconds.observe({ model: request.model, outcome }, (performance.now() - started) / 1000);
            throw error;
          }
        },
      };
    },
  };
}
