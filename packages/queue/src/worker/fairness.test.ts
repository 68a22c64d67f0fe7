/**
 * Fairness across tenants: a compaction's job is prioritized by its rank in its tenant's backlog,
 * so a tenant's single compaction runs right after the job already ahead of it, not after
 * another tenant's whole backlog. One worker running one job at a time makes the order exact.
 */
import { describe, expect, it } from 'vitest';
import { listCompactions, type CompactionRow } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import type { CompactionLimits } from '@compactor/workflow';
import { startCompaction } from '../jobs/dispatch';
import { reconcileOnce } from './reconciler';
import { useQueueHarness } from '../test-support/queue';

const q = useQueueHarness();
const BACKLOG = 12;

/** `count` sessions of the tenant, each with a compaction requested (in this order). */
async function requestMany(tenantId: string, count: number, limits: CompactionLimits) {
  const requested: CompactionRow[] = [];
  for (let i = 0; i < count; i++) {
    const session = await q.seedSession(generateCodingSession({ turns: 2 }), { tenantId });
    const { compaction } = await startCompaction(q.dispatch, session, { reason: 'manual' }, limits);
    requested.push(compaction);
  }
  return requested;
}

/** The compactions in the order the worker claimed them. */
async function runInOrder(compactions: CompactionRow[]): Promise<string[]> {
  q.startWorkers({ concurrency: 1, stepConcurrency: 1 });
  const done: CompactionRow[] = [];
  for (const c of compactions) done.push(await q.waitForStatus(c.id, ['completed'], 60_000));
  return done.sort((a, b) => a.startedAt!.getTime() - b.startedAt!.getTime()).map((c) => c.id);
}

describe("one tenant's backlog does not hold back another tenant's compaction", () => {
  it.each([
    ['without a cap on active compactions', {}],
    ['under a cap the backlog fits in', { maxActivePerTenant: 50 }],
  ])('%s', async (_, limits: CompactionLimits) => {
    const tenantA = `fair-a-${Object.keys(limits).length}`;
    const backlog = await requestMany(tenantA, BACKLOG, limits);
    const [single] = await requestMany(`fair-b-${Object.keys(limits).length}`, 1, limits);

    const order = await runInOrder([...backlog, single!]);
    // Only A's first job (the same rank, queued earlier) runs before B's; A's keep their order.
    expect(order.indexOf(single!.id)).toBe(1);
    expect(order.filter((id) => id !== single!.id)).toEqual(backlog.map((c) => c.id));
  });

  it('keeps the rank when the reconciler enqueues what Redis lost', async () => {
    const backlog = await requestMany('fair-redrive-a', BACKLOG, {});
    const [single] = await requestMany('fair-redrive-b', 1, {});
    await q.queues.queue('compact').obliterate({ force: true });
    // The rows are past the grace; the pass enqueues them all again, in the order it finds them.
    const report = await reconcileOnce(q.dispatch, { graceMs: 0, stepTimeoutMs: 60_000 });
    expect(report.redriven).toBe(BACKLOG + 1);

    const order = await runInOrder([...backlog, single!]);
    expect(order.indexOf(single!.id)).toBe(0);
    const rows = await listCompactions(q.resources.db, single!.sessionPk, { limit: 5 });
    expect(rows.map((r) => r.status)).toEqual(['completed']);
  });
});
