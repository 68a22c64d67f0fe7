/**
 * `POST /v1/sessions/:id/overflow` with the classifier's own fixtures: real provider wordings,
 * each overflow starting an emergency compaction, everything else writing nothing.
 */
import { describe, expect, it } from 'vitest';
// Not exported by @compactor/core: its test fixtures.
import { NOT_OVERFLOW_ERRORS, OVERFLOW_ERRORS } from '../../../../packages/core/src/overflow-errors.fixtures';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';
import { compactionsOf as compactionRows, newSession as createSession } from '../test-support/helpers';

// Every fixture leaves a compaction pending (no workers run here): more than the default cap
// on a tenant's active compactions, which has its own test (compactions.limits.test.ts).
const api = useTestApi({ server: { tenantLimits: { maxActiveCompactions: 0 } } });
const newSession = (id: string, extra: Record<string, unknown> = {}) => createSession(api, id, extra);
const compactionsOf = (session: string) => compactionRows(api, session);

/** Reports an overflow; a string payload is sent as raw JSON text. */
const overflow = (session: string, payload: unknown, key?: string) =>
  api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/overflow`,
    headers: { 'content-type': 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    ...(key ? { key } : {}),
  });

describe('POST /v1/sessions/:id/overflow', () => {
  it.each(OVERFLOW_ERRORS.map((fixture) => [fixture.name, fixture] as const))(
    'a provider overflow starts an emergency compaction: %s',
    async (_name, fixture) => {
      const session = `o-${OVERFLOW_ERRORS.indexOf(fixture)}`;
      await newSession(session);
      const { message, status, body } = fixture.report;
      const response = await overflow(session, {
        error: message ?? null,
        status: status ?? null,
        body: body ?? null,
      });
      expect(response.statusCode).toBe(200);
      const result = response.json();
      expect(result).toMatchObject({ overflow: true, kind: 'error', matched: expect.any(String) });
      expect(result.compaction).toMatchObject({ reason: 'overflow', force: true, status: 'pending' });
      expect(await api.queues.queue('compact').getJob(result.compaction.id)).toBeTruthy();
    },
  );

  it.each(NOT_OVERFLOW_ERRORS.map((fixture) => [fixture.name, fixture] as const))(
    'anything else writes nothing: %s',
    async (_name, fixture) => {
      await newSession('o-not').catch(() => undefined);
      const before = await api.counts();
      const { message, status, body } = fixture.report;
      const response = await overflow('o-not', {
        ...(message ? { error: message } : {}),
        ...(status ? { status } : {}),
        ...(body ? { body } : {}),
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ overflow: false, kind: null, matched: null, compaction: null });
      expect(await api.counts()).toEqual(before);
    },
  );

  it('a reported prompt above the window is a silent overflow; one within it is not', async () => {
    await newSession('o-usage');
    const within = await overflow('o-usage', { usage: { input: 100_000, output: 10 } });
    expect(within.json()).toMatchObject({ overflow: false, kind: null, compaction: null });
    expect(await compactionsOf('o-usage')).toEqual([]);
    const silent = await overflow('o-usage', { usage: { input: 120_000, output: 10, cacheRead: 9_000 } });
    expect(silent.json()).toMatchObject({
      overflow: true,
      kind: 'usage',
      compaction: { reason: 'overflow' },
    });
    // Reported again while it runs: the same emergency compaction.
    const again = await overflow('o-usage', { error: 'context_length_exceeded', status: 400 });
    expect(again.json().compaction.id).toBe(silent.json().compaction.id);
    expect(await compactionsOf('o-usage')).toHaveLength(1);
  });

  it('with auto compaction off, says so and starts nothing', async () => {
    await newSession('o-manual', { policy: { auto: false } });
    const response = await overflow('o-manual', {
      error: 'prompt is too long: 210000 tokens > 200000 maximum',
    });
    expect(response.json()).toMatchObject({ overflow: true, kind: 'error', compaction: null });
    expect(await compactionsOf('o-manual')).toEqual([]);
  });

  it.each<[string, unknown]>([
    ['a NUL byte in the error', { error: 'context\u0000length' }],
    ['a lone surrogate in the body', { body: '\ud83d' }],
    ['a status above int4', { status: 2_147_483_648 }],
    ['a status that is not HTTP', { status: 99 }],
    ['a float status', { status: 400.5 }],
    ['usage above int4', { usage: { input: 2_147_483_648, output: 0 } }],
    ['negative usage', { usage: { input: -1, output: 0 } }],
    ['float usage', { usage: { input: 1.5, output: 0 } }],
    ['usage with an unknown field', { usage: { input: 1, output: 0, total: 1 } }],
    ['an unknown finish', { usage: { input: 1, output: 0 }, finish: 'done' }],
    ['an unknown field', { error: 'x', retry: true }],
    ['a 100,000-element array', { error: Array(100_000).fill('context_length_exceeded') }],
    ['an error over 64 KiB', { error: 'x'.repeat(64 * 1024 + 1) }],
    ['a 100,000-deep JSON value', `{"usage":${'['.repeat(100_000)}${']'.repeat(100_000)}}`],
    ['an unparseable body', '{"error": "context_length_exceeded"'],
  ])('rejects %s with 400, writing nothing', async (_label, payload) => {
    await newSession('o-hostile').catch(() => undefined);
    const before = await api.counts();
    const response = await overflow('o-hostile', payload);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
    expect(await api.counts()).toEqual(before);
  });

  it('answers 404 to another tenant, writing nothing', async () => {
    await newSession('o-tenant');
    const before = await api.counts();
    const response = await overflow('o-tenant', { error: 'context_length_exceeded' }, TENANT_B_KEY);
    expect(response.statusCode).toBe(404);
    expect(await api.counts()).toEqual(before);
  });
});
