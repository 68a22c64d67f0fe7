import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { JOB_NAMES, type JobQueues, type ReconcileReport } from '@compactor/queue';

/** The worker's Prometheus metrics; queue depths are read from Redis at scrape time. */
export interface WorkerMetrics {
  readonly registry: Registry;
  jobEnded(queue: string, outcome: string, durationMs: number): void;
  reconciled(report: ReconcileReport): void;
}

export function createWorkerMetrics(queues: JobQueues, activeJobs: () => number): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'compactor_worker_' });
  const jobSeconds = new Histogram({
    name: 'compactor_job_duration_seconds',
    help: 'Duration of one job try, by queue and outcome (completed, skipped, failed, inactive, stale, error).',
    labelNames: ['queue', 'outcome'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const reconciled = new Counter({
    name: 'compactor_reconciler_actions_total',
    help: 'Reconciler actions: outbox entries dispatched, compactions re-enqueued or abandoned.',
    labelNames: ['action'],
    registers: [registry],
  });
  new Gauge({
    name: 'compactor_worker_active_jobs',
    help: 'Jobs this process is running now.',
    registers: [registry],
    collect() {
      this.set(activeJobs());
    },
  });
  new Gauge({
    name: 'compactor_queue_jobs',
    help: 'Jobs in each queue by state (the autoscaling signal: waiting + delayed).',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      for (const name of JOB_NAMES) {
        const counts = await queues.queue(name).getJobCounts('waiting', 'active', 'delayed', 'failed');
        for (const [state, count] of Object.entries(counts)) this.set({ queue: name, state }, count);
      }
    },
  });
  return {
    registry,
    jobEnded(queue, outcome, durationMs) {
      jobSeconds.observe({ queue, outcome }, durationMs / 1000);
    },
    reconciled(report) {
      if (report.dispatched) reconciled.inc({ action: 'dispatched' }, report.dispatched);
      if (report.redriven) reconciled.inc({ action: 'redriven' }, report.redriven);
      if (report.abandoned) reconciled.inc({ action: 'abandoned' }, report.abandoned);
    },
  };
}
