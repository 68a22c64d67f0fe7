import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { JobQueues } from '@compactor/queue';
import { createApiMetrics } from '../../apps/api/src/http/metrics';
import { createWorkerMetrics } from '../../apps/worker/src/metrics';

/**
 * infra/grafana/compactor-dashboard.json queries only metrics the API and the worker export: a
 * renamed metric breaks this test, not a dashboard nobody looks at until an incident.
 */
const dashboard = JSON.parse(
  readFileSync(new URL('../../infra/grafana/compactor-dashboard.json', import.meta.url), 'utf8'),
) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };

const noQueues = { queue: () => ({ getJobCounts: async () => ({}) }) } as unknown as JobQueues;

/** Every series name either process can expose, histograms with their _bucket/_count/_sum. */
async function exportedNames(): Promise<Set<string>> {
  const registries = [
    createApiMetrics({ queueCounts: async () => ({}) }),
    createWorkerMetrics(noQueues, { active: () => 0, queued: () => 0 }).registry,
  ];
  const names = new Set<string>();
  for (const registry of registries) {
    for (const metric of await registry.getMetricsAsJSON()) {
      names.add(metric.name);
      if (String(metric.type) === 'histogram')
        for (const suffix of ['_bucket', '_count', '_sum']) names.add(metric.name + suffix);
    }
  }
  return names;
}

describe('the Grafana dashboard', () => {
  it('queries only metrics Compactor exports', async () => {
    const exported = await exportedNames();
    const used = dashboard.panels.flatMap((panel) =>
      panel.targets.flatMap((target) =>
        (target.expr.match(/compactor_[a-z_]+/g) ?? []).map((name) => ({ panel: panel.title, name })),
      ),
    );
    expect(used.length).toBeGreaterThan(15);
    expect(used.filter(({ name }) => !exported.has(name))).toEqual([]);
  });

  it('shows every compaction, LLM and queue metric somewhere', async () => {
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)).join('\n');
    for (const name of [
      'compactor_compactions_total',
      'compactor_compaction_fallbacks_total',
      'compactor_tokens_saved_total',
      'compactor_step_duration_seconds',
      'compactor_llm_request_duration_seconds',
      'compactor_llm_tokens_total',
      'compactor_llm_cost_usd_total',
      'compactor_queue_jobs',
      'compactor_reconciler_actions_total',
      'compactor_api_requests_total',
      'compactor_api_request_duration_seconds',
      'compactor_tenant_limit_rejections_total',
      'compactor_auto_compactions_deferred_total',
      'compactor_api_event_streams',
    ]) {
      expect(exprs, name).toContain(name);
    }
  });
});
