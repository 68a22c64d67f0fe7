import { describe, expect, it } from 'vitest';
import { findCompaction } from '@compactor/db';
import { useReliabilityRig, waitForTerminal } from './harness';

/**
 * The worker's /metrics after real compactions (issue 10): compactions by reason, strategy and
 * status, step durations, LLM requests with tokens, tokens saved and queue depth, each with the
 * numbers the compactions' rows say.
 */
const rig = useReliabilityRig({ label: 'rel-metrics' });

/** `name{labels} value` lines of a Prometheus text exposition, as a map. */
function samples(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}

describe('worker metrics', () => {
  it('count what the compactions did', async () => {
    const { ids } = await rig.compactCodingSessions({ count: 4, firstSeed: 1, workers: 1 });
    await waitForTerminal(rig.database.db, ids, 60_000);
    const rows = await Promise.all(ids.map(async (id) => (await findCompaction(rig.database.db, id))!));
    expect(rows.every((r) => r.status === 'completed')).toBe(true);
    const [worker] = rig.fleet.ready;
    const response = await fetch(`http://127.0.0.1:${worker!.port}/metrics`);
    expect(response.status).toBe(200);
    const metrics = samples(await response.text());

    expect(
      metrics.get('compactor_compactions_total{reason="manual",strategy="summarize",status="completed"}'),
    ).toBe(4);
    for (const step of ['prune', 'summarize', 'finalize']) {
      expect(
        metrics.get(`compactor_step_duration_seconds_count{step="${step}",outcome="completed"}`),
        step,
      ).toBe(4);
    }
    const llmRequests = [...metrics]
      .filter(
        ([key]) =>
          key.startsWith('compactor_llm_request_duration_seconds_count{') && key.includes('outcome="ok"'),
      )
      .reduce((sum, [, value]) => sum + value, 0);
    expect(llmRequests).toBeGreaterThanOrEqual(4);
    const inputTokens = [...metrics]
      .filter(([key]) => key.startsWith('compactor_llm_tokens_total{') && key.includes('kind="input"'))
      .reduce((sum, [, value]) => sum + value, 0);
    expect(inputTokens).toBe(rows.reduce((sum, r) => sum + (r.usageInput ?? 0), 0));
    const saved = rows.reduce((sum, r) => sum + (r.tokensBefore! - r.tokensAfter!), 0);
    expect(metrics.get('compactor_tokens_saved_total')).toBe(saved);
    expect(metrics.get('compactor_queue_jobs{queue="compact",state="waiting"}')).toBe(0);
  });
});
