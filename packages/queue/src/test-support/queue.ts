import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, inject, vi } from 'vitest';
import { findCompaction, type CompactionRow } from '@compactor/db';
import { uniqueQueuePrefix } from '@compactor/testing';
import { silentLog, type SessionEvent, type WorkflowResources } from '@compactor/workflow';
import { contractIssue, useWorkflow, type WorkflowHarness } from '@compactor/workflow/testing';
import { redisEventPublisher, redisEventSource, type SessionEventSource } from '../events/session-events';
import { startDeferredWhenEnded, type DispatchDeps } from '../jobs/dispatch';
import { createJobQueues, type JobQueues } from '../jobs/queues';
import { startWorkers, type RunningWorkers, type WorkerOptions } from '../worker/workers';

export interface QueueHarness extends WorkflowHarness {
  readonly prefix: string;
  readonly queues: JobQueues;
  readonly redis: Redis;
  readonly events: SessionEventSource;
  /** Resources with events published on this file's prefix. */
  readonly live: WorkflowResources;
  readonly dispatch: DispatchDeps;
  /**
   * Starts in-process workers on this file's queues (stopped after each test); `resources`
   * replace {@link live}'s. A compaction's end starts its tenant's deferred ones, as in the worker.
   */
  startWorkers(options?: Partial<WorkerOptions>, resources?: Partial<WorkflowResources>): RunningWorkers;
  /**
   * Subscribes now; the array fills with the session's events as they arrive (until the test
   * ends). Each must be what the contract types: one that is not fails the test.
   */
  record(sessionPk: number): Promise<SessionEvent[]>;
  /** Polls the compaction's row until its status is one of `statuses` (20 s at most by default). */
  waitForStatus(id: string, statuses: readonly string[], timeoutMs?: number): Promise<CompactionRow>;
}

/** Real Redis queues under a prefix of this file's own, on top of {@link useWorkflow}. */
export function useQueueHarness(policy?: Partial<JobQueues['policy']>): QueueHarness {
  const w = useWorkflow();
  const prefix = `{${uniqueQueuePrefix('queue')}}`;
  let state: { queues: JobQueues; redis: Redis; subscriber: Redis; events: SessionEventSource } | undefined;
  const running: RunningWorkers[] = [];
  const unsubscribes: Array<() => void> = [];
  let recordedIssues: string[] = [];
  const connection = () => ({ url: inject('redisUrl'), maxRetriesPerRequest: null });

  beforeAll(async () => {
    const redis = new Redis(inject('redisUrl'));
    const subscriber = new Redis(inject('redisUrl'));
    state = {
      redis,
      subscriber,
      events: redisEventSource(subscriber, prefix),
      queues: createJobQueues({
        connection: connection(),
        prefix,
        policy: {
          attempts: 3,
          backoffBaseMs: 20,
          keepCompleted: { count: 100, ageSeconds: 3600 },
          keepFailed: { count: 100, ageSeconds: 3600 },
          ...policy,
        },
      }),
    };
  });
  afterEach(async () => {
    for (const unsubscribe of unsubscribes.splice(0)) unsubscribe();
    await Promise.all(running.splice(0).map((r) => r.close(5_000)));
    const issues = recordedIssues;
    recordedIssues = [];
    expect(issues, 'recorded events the contract does not type').toEqual([]);
  });
  afterAll(async () => {
    if (!state) return;
    for (const name of ['compact', 'prune', 'prepare'] as const)
      await state.queues.queue(name).obliterate({ force: true });
    await state.queues.close();
    await state.events.close();
    state.redis.disconnect();
  });

  const current = () => {
    if (!state) throw new Error('useQueueHarness(): only inside tests and hooks');
    return state;
  };
  const live = (): WorkflowResources => ({
    ...w.resources,
    events: redisEventPublisher(current().redis, prefix),
  });
  const dispatch = (): DispatchDeps => ({
    db: w.resources.db,
    queues: current().queues,
    events: redisEventPublisher(current().redis, prefix),
    log: silentLog,
    clock: () => new Date(),
  });
  const harness: QueueHarness = Object.create(w) as QueueHarness;
  return Object.defineProperties(harness, {
    prefix: { get: () => prefix },
    queues: { get: () => current().queues },
    redis: { get: () => current().redis },
    events: { get: () => current().events },
    live: { get: live },
    dispatch: { get: dispatch },
    startWorkers: {
      value: (options: Partial<WorkerOptions> = {}, resources: Partial<WorkflowResources> = {}) => {
        const workers = startWorkers(
          { ...live(), ...resources },
          {
            connection: connection(),
            prefix,
            policy: current().queues.policy,
            concurrency: 4,
            on: { 'compaction.ended': startDeferredWhenEnded(dispatch()) },
            ...options,
          },
        );
        running.push(workers);
        return workers;
      },
    },
    waitForStatus: {
      value: (id: string, statuses: readonly string[], timeoutMs = 20_000) =>
        vi.waitFor(
          async () => {
            const row = await findCompaction(w.resources.db, id);
            if (!row || !statuses.includes(row.status)) throw new Error(`still ${row?.status}`);
            return row;
          },
          { timeout: timeoutMs, interval: 50 },
        ),
    },
    record: {
      value: async (sessionPk: number) => {
        const seen: SessionEvent[] = [];
        const onEvent = (event: SessionEvent) => {
          seen.push(event);
          const issue = contractIssue(event);
          if (issue) recordedIssues.push(issue);
        };
        unsubscribes.push(await current().events.subscribe(sessionPk, onEvent));
        return seen;
      },
    },
  });
}
