/**
 * Manual compactions (idempotent, one active per session, hostile input), prune jobs, the
 * history and one compaction with its steps.
 */
import { describe, expect, it } from 'vitest';
import { insertCompactionStep, finishCompactionStep } from '@compactor/db';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';
import { compactionsOf as compactionRows, newSession as createSession } from '../test-support/helpers';

const api = useTestApi();

const newSession = (id: string, extra: Record<string, unknown> = {}) => createSession(api, id, extra);
const compactionsOf = (session: string) => compactionRows(api, session);

const compact = (
  session: string,
  payload?: unknown,
  options: { key?: string | null; idempotencyKey?: string } = {},
) =>
  api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/compactions`,
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    ...(options.key === undefined ? {} : { key: options.key }),
    headers: options.idempotencyKey === undefined ? {} : { 'idempotency-key': options.idempotencyKey },
  });

/** Ends the active compaction of a session as a worker would (so another can start). */
async function finishActive(session: string, status: 'completed' | 'failed' = 'completed') {
  await api.database.database.pool.query(
    `update compactions set status = $2, finished_at = now(), covers_through_seq = 0
     where session_pk = (select pk from sessions where id = $1) and status in ('pending', 'running')`,
    [session, status],
  );
}

describe('POST /v1/sessions/:id/compactions', () => {
  it('answers 202 with a new compaction, enqueued under its id; a repeat gets the active one (200)', async () => {
    await newSession('c-new');
    const response = await compact('c-new', { keepRecentTokens: 20_000, instructions: 'focus on the API' });
    expect(response.statusCode).toBe(202);
    const compaction = response.json();
    expect(compaction).toMatchObject({
      sessionId: 'c-new',
      reason: 'manual',
      strategy: 'summarize',
      status: 'pending',
      keepRecentTokens: 20_000,
      force: false,
      summaryMessageIds: [],
      error: null,
    });
    expect(compaction).not.toHaveProperty('instructions');
    expect(compaction.id).toMatch(/^cmp_/);

    const job = await api.queues.queue('compact').getJob(compaction.id);
    expect(job?.data).toEqual({ compactionId: compaction.id });
    const { rows } = await api.database.database.pool.query(
      'select job_name, dispatched_at from outbox where job_id = $1',
      [compaction.id],
    );
    expect(rows).toEqual([{ job_name: 'compact', dispatched_at: expect.any(Date) }]);

    // Another request while it is active (even with another body) returns it as is.
    const again = await compact('c-new', { strategy: 'truncate' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ id: compaction.id, strategy: 'summarize' });
    const noBody = await compact('c-new');
    expect(noBody.statusCode).toBe(200);
    expect(noBody.json().id).toBe(compaction.id);
    expect(await compactionsOf('c-new')).toHaveLength(1);
  });

  it('takes no body at all, and the policy strategy by default', async () => {
    await newSession('c-nobody', { policy: { strategy: 'truncate' } });
    const response = await compact('c-nobody');
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({ strategy: 'truncate', keepRecentTokens: null });
  });

  it('starts exactly one compaction and one job for 20 concurrent identical requests', async () => {
    await newSession('c-race');
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => compact('c-race', { instructions: 'same' })),
    );
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, ...Array(18).fill(200), 202].sort());
    const ids = new Set(responses.map((r) => r.json().id));
    expect(ids.size).toBe(1);
    const rows = await compactionsOf('c-race');
    expect(rows).toHaveLength(1);
    const jobs = (await api.jobs('compact')).filter((job) => job.id === rows[0]!.id);
    expect(jobs).toHaveLength(1);
    const { rows: outbox } = await api.database.database.pool.query(
      'select count(*)::int as n from outbox where job_id = $1',
      [rows[0]!.id],
    );
    expect(outbox[0].n).toBe(1);
  });

  it('with an Idempotency-Key: a repeat returns the same compaction, another body is a 409', async () => {
    await newSession('c-idem');
    const body = { instructions: 'keep the schema decisions', keepRecentTokens: 10_000 };
    const first = await compact('c-idem', body, { idempotencyKey: 'retry-1' });
    expect(first.statusCode).toBe(202);
    const id = first.json().id;

    const repeat = await compact('c-idem', body, { idempotencyKey: 'retry-1' });
    expect(repeat.statusCode).toBe(200);
    expect(repeat.json().id).toBe(id);

    const before = await api.counts();
    for (const other of [
      { ...body, instructions: 'something else' },
      { ...body, keepRecentTokens: 10_001 },
      { ...body, strategy: 'truncate' },
      { instructions: body.instructions },
    ]) {
      const conflict = await compact('c-idem', other, { idempotencyKey: 'retry-1' });
      expect(conflict.statusCode).toBe(409);
      expect(conflict.json().error.code).toBe('conflict');
    }
    // The default strategy spelled out is the same request.
    const spelled = await compact(
      'c-idem',
      { ...body, strategy: 'summarize' },
      { idempotencyKey: 'retry-1' },
    );
    expect(spelled.statusCode).toBe(200);

    // Still the same after it finished: the key names that compaction, it does not start another.
    await finishActive('c-idem');
    const later = await compact('c-idem', body, { idempotencyKey: 'retry-1' });
    expect(later.statusCode).toBe(200);
    expect(later.json()).toMatchObject({ id, status: 'completed' });
    expect(await api.counts()).toEqual(before);

    // A new key starts a new one.
    const fresh = await compact('c-idem', body, { idempotencyKey: 'retry-2' });
    expect(fresh.statusCode).toBe(202);
    expect(fresh.json().id).not.toBe(id);
  });

  it('with an Idempotency-Key that joins the active compaction: bound to its first body all the same', async () => {
    await newSession('c-idem-join');
    const active = await compact('c-idem-join', { instructions: 'the first one' });
    expect(active.statusCode).toBe(202);
    const activeId = active.json().id;
    const body = { instructions: 'mine', keepRecentTokens: 5_000 };

    const joined = await compact('c-idem-join', body, { idempotencyKey: 'join-1' });
    expect(joined.statusCode).toBe(200);
    expect(joined.json().id).toBe(activeId);

    const before = await api.counts();
    for (const other of [
      { ...body, instructions: 'something else' },
      { ...body, keepRecentTokens: 5_001 },
      { ...body, strategy: 'truncate' },
      {},
    ]) {
      const conflict = await compact('c-idem-join', other, { idempotencyKey: 'join-1' });
      expect(conflict.statusCode, JSON.stringify(other)).toBe(409);
      expect(conflict.json().error).toMatchObject({
        code: 'conflict',
        details: { idempotencyKey: 'join-1' },
      });
    }
    expect(await api.counts()).toEqual(before);
    expect((await compact('c-idem-join', body, { idempotencyKey: 'join-1' })).json().id).toBe(activeId);

    // After the joined compaction finished, the key still names it and still refuses another body:
    // it neither starts a compaction nor answers for one it did not ask for.
    await finishActive('c-idem-join');
    const later = await compact('c-idem-join', body, { idempotencyKey: 'join-1' });
    expect(later.statusCode).toBe(200);
    expect(later.json()).toMatchObject({ id: activeId, status: 'completed' });
    expect((await compact('c-idem-join', {}, { idempotencyKey: 'join-1' })).statusCode).toBe(409);
    expect(await compactionsOf('c-idem-join')).toHaveLength(1);

    // Keys are per session: another session's use of the same key is its own.
    await newSession('c-idem-join-2');
    expect((await compact('c-idem-join-2', {}, { idempotencyKey: 'join-1' })).statusCode).toBe(202);
  });

  it('with one Idempotency-Key and different bodies joining at once: one is bound, the other is a 409', async () => {
    await newSession('c-idem-join-race');
    expect((await compact('c-idem-join-race', {})).statusCode).toBe(202);
    const answers = await Promise.all(
      ['a', 'b', 'a', 'b'].map((instructions) =>
        compact('c-idem-join-race', { instructions }, { idempotencyKey: 'k' }),
      ),
    );
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 409)).toHaveLength(2);
    // The two answered 200 asked the same thing.
    expect(statuses[0]).toBe(statuses[2]);
  });

  it('with the same Idempotency-Key and different bodies at once: one wins, the other is a 409', async () => {
    await newSession('c-idem-race');
    const [a, b] = await Promise.all([
      compact('c-idem-race', { instructions: 'a' }, { idempotencyKey: 'k' }),
      compact('c-idem-race', { instructions: 'b' }, { idempotencyKey: 'k' }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([202, 409]);
    expect(await compactionsOf('c-idem-race')).toHaveLength(1);
  });

  describe('rejects hostile input with 400, writing nothing', () => {
    const deep = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    const json = JSON.stringify;
    it.each<[string, string, string | undefined]>([
      ['a NUL byte in instructions', json({ instructions: 'focus\u0000' }), undefined],
      ['a lone high surrogate in instructions', json({ instructions: 'focus \ud800 here' }), undefined],
      ['a lone low surrogate in instructions', json({ instructions: '\udc00' }), undefined],
      ['instructions over 8 KiB', json({ instructions: 'x'.repeat(8193) }), undefined],
      ['instructions over 8 KiB in UTF-8 (3000 × €)', json({ instructions: '€'.repeat(3000) }), undefined],
      ['instructions that are not a string', json({ instructions: ['focus'] }), undefined],
      ['keepRecentTokens above int4', json({ keepRecentTokens: 2_147_483_648 }), undefined],
      ['keepRecentTokens negative', json({ keepRecentTokens: -1 }), undefined],
      ['keepRecentTokens zero', json({ keepRecentTokens: 0 }), undefined],
      ['keepRecentTokens a float', json({ keepRecentTokens: 1.5 }), undefined],
      ['keepRecentTokens a string', json({ keepRecentTokens: '100' }), undefined],
      ['keepRecentTokens above the context window', json({ keepRecentTokens: 128_001 }), undefined],
      ['an unknown strategy', json({ strategy: 'compress' }), undefined],
      ['an unknown field', json({ force: true }), undefined],
      ['a 100,000-element array', json({ instructions: Array(100_000).fill('a') }), undefined],
      ['a 100,000-deep JSON value', `{"instructions":${deep(100_000)}}`, undefined],
      ['a JSON null body', json(null), undefined],
      ['an array body', json([]), undefined],
      ['an Idempotency-Key over 200 characters', json({}), 'k'.repeat(201)],
      ['an Idempotency-Key with non-ASCII', json({}), 'clé'],
      ['an empty Idempotency-Key', json({}), ''],
    ])('%s', async (_label, payload, idempotencyKey) => {
      await newSession('c-hostile').catch(() => undefined);
      const before = await api.counts();
      const response = await api.request({
        method: 'POST',
        url: '/v1/sessions/c-hostile/compactions',
        headers: {
          'content-type': 'application/json',
          ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
        },
        payload,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatchObject({ code: 'validation_error', message: expect.any(String) });
      expect(await api.counts()).toEqual(before);
      expect(await compactionsOf('c-hostile')).toEqual([]);
    });

    it('accepts the edges: 8 KiB of instructions, keepRecentTokens equal to the window', async () => {
      await newSession('c-edges');
      const response = await compact('c-edges', {
        instructions: 'x'.repeat(8192),
        keepRecentTokens: 128_000,
      });
      expect(response.statusCode).toBe(202);
    });
  });

  it('answers 404 for another tenant’s session or a missing one, writing nothing', async () => {
    await newSession('c-tenant');
    const before = await api.counts();
    expect((await compact('c-tenant', {}, { key: TENANT_B_KEY })).statusCode).toBe(404);
    expect((await compact('c-missing', {})).statusCode).toBe(404);
    expect((await compact('c-tenant', {}, { key: null })).statusCode).toBe(401);
    expect(await api.counts()).toEqual(before);
  });
});

describe('POST /v1/sessions/:id/prune', () => {
  it('answers 202 with the id of a prune job in the queue', async () => {
    await newSession('p-prune');
    const response = await api.request({ method: 'POST', url: '/v1/sessions/p-prune/prune' });
    expect(response.statusCode).toBe(202);
    const { jobId } = response.json();
    const job = await api.queues.queue('prune').getJob(jobId);
    expect(job?.data).toMatchObject({ reason: 'manual', sessionPk: expect.any(Number) });
  });

  it('answers 404 to another tenant, enqueueing nothing', async () => {
    await newSession('p-tenant');
    const before = await api.counts();
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions/p-tenant/prune',
      key: TENANT_B_KEY,
    });
    expect(response.statusCode).toBe(404);
    expect(await api.counts()).toEqual(before);
  });
});

describe('GET /v1/sessions/:id/compactions', () => {
  it('pages the history newest first by compaction id', async () => {
    await newSession('l-page');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await compact('l-page', { instructions: `round ${i}` });
      expect(response.statusCode).toBe(202);
      ids.push(response.json().id);
      await finishActive('l-page', i % 2 ? 'failed' : 'completed');
    }
    const newestFirst = [...ids].reverse();
    const seen: string[] = [];
    let before: string | null = null;
    let pages = 0;
    do {
      const query: string = before ? `limit=2&before=${before}` : 'limit=2';
      const response = await api.request({ method: 'GET', url: `/v1/sessions/l-page/compactions?${query}` });
      expect(response.statusCode).toBe(200);
      const page = response.json();
      expect(page.compactions.length).toBeLessThanOrEqual(2);
      seen.push(...page.compactions.map((c: { id: string }) => c.id));
      before = page.nextBefore;
      pages++;
    } while (before !== null);
    expect(seen).toEqual(newestFirst);
    expect(pages).toBe(3);

    const all = (await api.request({ method: 'GET', url: '/v1/sessions/l-page/compactions' })).json();
    expect(all.compactions.map((c: { id: string }) => c.id)).toEqual(newestFirst);
    expect(all.nextBefore).toBeNull();
    expect(all.compactions[0]).toMatchObject({ sessionId: 'l-page', status: 'completed', reason: 'manual' });
  });

  it('an empty history is an empty page', async () => {
    await newSession('l-empty');
    const response = await api.request({ method: 'GET', url: '/v1/sessions/l-empty/compactions' });
    expect(response.json()).toEqual({ compactions: [], nextBefore: null });
  });

  it.each([
    'limit=0',
    'limit=101',
    'limit=1.5',
    'limit=ten',
    'before=',
    'before=cmp_unknown',
    'before=has%20space',
    `before=${'x'.repeat(201)}`,
    'cursor=x',
  ])('rejects ?%s with 400', async (query) => {
    await newSession('l-bad').catch(() => undefined);
    const response = await api.request({ method: 'GET', url: `/v1/sessions/l-bad/compactions?${query}` });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
  });

  it('does not take another session’s compaction as a cursor, nor list another tenant’s', async () => {
    await newSession('l-one');
    await newSession('l-two');
    const other = (await compact('l-two', {})).json().id;
    const response = await api.request({
      method: 'GET',
      url: `/v1/sessions/l-one/compactions?before=${other}`,
    });
    expect(response.statusCode).toBe(400);
    const foreign = await api.request({
      method: 'GET',
      url: '/v1/sessions/l-two/compactions',
      key: TENANT_B_KEY,
    });
    expect(foreign.statusCode).toBe(404);
  });
});

describe('GET /v1/compactions/:id', () => {
  it('returns the compaction with its step attempts (numbers, never text)', async () => {
    await newSession('g-one');
    const id = (await compact('g-one', { instructions: 'secret focus' })).json().id;
    const step = await insertCompactionStep(api.database.db, {
      compactionId: id,
      step: 'prune',
      attempt: 1,
      status: 'running',
      startedAt: new Date('2026-01-01T00:00:00Z'),
    });
    await finishCompactionStep(api.database.db, step.pk, {
      status: 'completed',
      detail: { prunedParts: 3, prunedTokens: 42_000 },
      at: new Date('2026-01-01T00:00:01Z'),
    });
    await insertCompactionStep(api.database.db, {
      compactionId: id,
      step: 'summarize',
      attempt: 1,
      status: 'running',
      startedAt: new Date('2026-01-01T00:00:02Z'),
    });

    const response = await api.request({ method: 'GET', url: `/v1/compactions/${id}` });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ id, sessionId: 'g-one', reason: 'manual', status: 'pending' });
    expect(body.steps).toEqual([
      {
        step: 'prune',
        attempt: 1,
        status: 'completed',
        startedAt: '2026-01-01T00:00:00.000Z',
        finishedAt: '2026-01-01T00:00:01.000Z',
        detail: { prunedParts: 3, prunedTokens: 42_000 },
      },
      {
        step: 'summarize',
        attempt: 1,
        status: 'running',
        startedAt: '2026-01-01T00:00:02.000Z',
        finishedAt: null,
        detail: {},
      },
    ]);
    expect(response.body).not.toContain('secret focus');
  });

  it('answers 404 for another tenant’s compaction and for an unknown id', async () => {
    await newSession('g-tenant');
    const id = (await compact('g-tenant', {})).json().id;
    expect(
      (await api.request({ method: 'GET', url: `/v1/compactions/${id}`, key: TENANT_B_KEY })).statusCode,
    ).toBe(404);
    const missing = await api.request({ method: 'GET', url: '/v1/compactions/cmp_nope' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('not_found');
  });
});
