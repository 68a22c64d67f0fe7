import { describe, expect, it } from 'vitest';
import { MAX_CLIENT_ID_LENGTH } from '@compactor/contract';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';

const api = useTestApi();

const createBody = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  model: { id: 'gpt-4o', provider: 'openai' },
  ...extra,
});

async function countSessions(): Promise<number> {
  const result = await api.database.database.pool.query('select count(*)::int as n from sessions');
  return result.rows[0].n;
}

describe('ids at the length limit', () => {
  it('reaches a session and a message whose ids are as long as creation allows, even percent-encoded', async () => {
    // Every character of these ids must be percent-encoded in a path: 600 characters in the URL.
    const sessionId = '/'.repeat(MAX_CLIENT_ID_LENGTH);
    const messageId = '%'.repeat(MAX_CLIENT_ID_LENGTH);
    const path = `/v1/sessions/${encodeURIComponent(sessionId)}`;
    expect(
      (await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody(sessionId) })).statusCode,
    ).toBe(201);
    expect((await api.request({ method: 'GET', url: path })).statusCode).toBe(200);
    const appended = await api.request({
      method: 'POST',
      url: `${path}/messages`,
      payload: { messages: [{ id: messageId, role: 'assistant', parts: [{ type: 'text', text: 'hi' }] }] },
    });
    expect(appended.statusCode).toBe(201);
    const message = await api.request({
      method: 'PATCH',
      url: `${path}/messages/${encodeURIComponent(messageId)}`,
      payload: { finish: 'stop' },
    });
    expect(message.statusCode).toBe(200);
    expect((await api.request({ method: 'DELETE', url: path })).statusCode).toBe(204);
  });

  it('refuses at creation an id one character longer than the limit', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: createBody('x'.repeat(MAX_CLIENT_ID_LENGTH + 1)),
    });
    expect(response.statusCode).toBe(400);
  });
});

describe('ids a URL cannot address', () => {
  it('refuses "." and ".." as session and message ids (URL-normalising clients resolve them)', async () => {
    const before = await countSessions();
    for (const id of ['.', '..']) {
      const created = await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody(id) });
      expect(created.statusCode, id).toBe(400);
      expect(created.json()).toMatchObject({
        error: { code: 'validation_error', details: { issues: [{ path: 'body.id' }] } },
      });
    }
    expect(await countSessions()).toBe(before);

    await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody('s-dots') });
    for (const id of ['.', '..']) {
      const appended = await api.request({
        method: 'POST',
        url: '/v1/sessions/s-dots/messages',
        payload: { messages: [{ id, role: 'user', parts: [{ type: 'text', text: 'hi' }] }] },
      });
      expect(appended.statusCode, id).toBe(400);
      expect(appended.json().error.code).toBe('validation_error');
    }
  });

  it('accepts ids made of dots that are not dot segments, and reaches them', async () => {
    for (const id of ['...', '.a', 'a.', '.%2e']) {
      const created = await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody(id) });
      expect(created.statusCode, id).toBe(201);
      const read = await api.request({ method: 'GET', url: `/v1/sessions/${encodeURIComponent(id)}` });
      expect(read.statusCode, id).toBe(200);
      expect(read.json().id).toBe(id);
    }
  });
});

describe('model limits', () => {
  const create = (id: string, model: Record<string, unknown>) =>
    api.request({ method: 'POST', url: '/v1/sessions', payload: { id, model: { id: 'gpt-4o', ...model } } });
  const issuesOf = (response: { json(): unknown }) =>
    (response.json() as { error: { details: { issues: Array<{ path: string; message: string }> } } }).error
      .details.issues;

  it('refuses limits that cannot work, naming the field, and writes nothing', async () => {
    const before = await countSessions();
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ contextWindow: 1 }, 'body.model.contextWindow', /0 \(unlimited\) or at least 1024/],
      [{ contextWindow: 1_023 }, 'body.model.contextWindow', /at least 1024/],
      [
        { contextWindow: 8_192, maxOutputTokens: 100_000_000 },
        'body.model.maxOutputTokens',
        /must not exceed the context window \(8192\)/,
      ],
      // The window from the known-model table (gpt-4o: 128,000) counts too.
      [{ maxOutputTokens: 200_000 }, 'body.model.maxOutputTokens', /context window \(128000\)/],
      [{ contextWindow: 8_192, inputLimit: 9_000 }, 'body.model.inputLimit', /must not exceed/],
      [{ inputLimit: 1 }, 'body.model.inputLimit', /at least 1024/],
    ];
    for (const [model, path, message] of cases) {
      const response = await create(`s-limits-${path}`, model);
      expect(response.statusCode, JSON.stringify(model)).toBe(400);
      expect(response.json().error.code).toBe('validation_error');
      expect(issuesOf(response)[0], JSON.stringify(model)).toMatchObject({
        path,
        message: expect.stringMatching(message),
      });
    }
    expect(await countSessions()).toBe(before);
  });

  it('accepts the edges: an unlimited window, 1,024 tokens, an output limit equal to the window', async () => {
    for (const [id, model] of [
      ['s-limits-unlimited', { contextWindow: 0, maxOutputTokens: 100_000_000 }],
      ['s-limits-min', { contextWindow: 1_024, maxOutputTokens: 1_024, inputLimit: 1_024 }],
      ['s-limits-gpt4', { id: 'gpt-4' }],
    ] as const) {
      const response = await create(id, model);
      expect(response.statusCode, id).toBe(201);
    }
  });

  it('fits the limits the client did not state to a smaller window it did', async () => {
    const response = await create('s-limits-fit', { contextWindow: 4_096 });
    expect(response.statusCode).toBe(201);
    expect(response.json().model).toMatchObject({ contextWindow: 4_096, maxOutputTokens: 4_096 });
    expect(response.json().status.usable).toBe(4_096 - 1_024);
  });

  it('checks a patch against the model it leaves, and leaves the session as it was on a 400', async () => {
    await create('s-limits-patch', { contextWindow: 64_000 });
    for (const [model, path] of [
      [{ contextWindow: 100 }, 'body.model.contextWindow'],
      [{ maxOutputTokens: 64_001 }, 'body.model.maxOutputTokens'],
      [{ inputLimit: 70_000 }, 'body.model.inputLimit'],
      [{ contextWindow: 8_192, maxOutputTokens: 9_000 }, 'body.model.maxOutputTokens'],
    ] as const) {
      const response = await api.request({
        method: 'PATCH',
        url: '/v1/sessions/s-limits-patch',
        payload: { model },
      });
      expect(response.statusCode, JSON.stringify(model)).toBe(400);
      expect(issuesOf(response)[0]?.path).toBe(path);
    }
    const unchanged = await api.request({ method: 'GET', url: '/v1/sessions/s-limits-patch' });
    expect(unchanged.json().model).toMatchObject({ contextWindow: 64_000, maxOutputTokens: 16_384 });

    // A smaller window alone fits the stored output limit to it.
    const smaller = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/s-limits-patch',
      payload: { model: { contextWindow: 8_192 } },
    });
    expect(smaller.statusCode).toBe(200);
    expect(smaller.json().model).toMatchObject({ contextWindow: 8_192, maxOutputTokens: 8_192 });
  });
});

describe('POST /v1/sessions', () => {
  it('creates a session, filling the model from the known-model table, with an empty status', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: createBody('s-create'),
    });
    expect(response.statusCode).toBe(201);
    const session = response.json();
    expect(session).toMatchObject({
      id: 's-create',
      model: {
        id: 'gpt-4o',
        provider: 'openai',
        contextWindow: 128_000,
        maxOutputTokens: 16_384,
        inputLimit: null,
      },
      policy: {},
      metadata: {},
      status: {
        tokens: 0,
        usable: 128_000 - 16_384,
        percent: 0,
        overflow: false,
        activeCompaction: null,
        lastCompaction: null,
      },
    });
    expect(session.effectivePolicy).toMatchObject({ preset: 'default', auto: true, prune: true });
  });

  it('gives an unknown model a 128000 window', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { model: { id: 'my-finetune' } },
    });
    expect(response.statusCode).toBe(201);
    expect(response.json().model.contextWindow).toBe(128_000);
    expect(response.json().id).toMatch(/^ses_[0-9a-f]{32}$/);
  });

  it('returns the same session (200) for the same id and body, and 409 for a different body', async () => {
    const body = createBody('s-idem', { metadata: { team: 'x' } });
    expect((await api.request({ method: 'POST', url: '/v1/sessions', payload: body })).statusCode).toBe(201);
    const again = await api.request({ method: 'POST', url: '/v1/sessions', payload: body });
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe('s-idem');
    const different = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: createBody('s-idem', { metadata: { team: 'y' } }),
    });
    expect(different.statusCode).toBe(409);
    expect(different.json().error.code).toBe('conflict');
  });

  it.each([
    ['an unknown field', { model: { id: 'gpt-4o' }, colour: 'red' }],
    ['a missing model', { id: 'x' }],
    ['a negative window', { model: { id: 'gpt-4o', contextWindow: -1 } }],
    ['an id with spaces', { id: 'has space', model: { id: 'gpt-4o' } }],
    ['an unknown policy key', { model: { id: 'gpt-4o' }, policy: { autoo: true } }],
    [
      'an out-of-range policy value',
      { model: { id: 'gpt-4o' }, policy: { trigger: { kind: 'ratio', ratio: 7 } } },
    ],
  ])('rejects %s with 400 and writes nothing', async (_label, payload) => {
    const before = await countSessions();
    const response = await api.request({ method: 'POST', url: '/v1/sessions', payload });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
    expect(response.json().error.message).toMatch(/\S/);
    expect(await countSessions()).toBe(before);
  });

  it('rejects a body that is not JSON with 400', async () => {
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: '{"model":',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
  });
});

describe('GET / PATCH / DELETE /v1/sessions/:id', () => {
  it('patches model, policy (deep merge) and metadata (null removes a key)', async () => {
    await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: createBody('s-patch', {
        policy: { pruning: { protectTokens: 30_000 } },
        metadata: { a: 1, b: 2 },
      }),
    });
    const response = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/s-patch',
      payload: { model: { contextWindow: 64_000 }, policy: { auto: false }, metadata: { b: null, c: 3 } },
    });
    expect(response.statusCode).toBe(200);
    const session = response.json();
    expect(session.model).toMatchObject({ id: 'gpt-4o', contextWindow: 64_000, maxOutputTokens: 16_384 });
    expect(session.policy).toEqual({ pruning: { protectTokens: 30_000 }, auto: false });
    expect(session.effectivePolicy).toMatchObject({ auto: false, pruning: { protectTokens: 30_000 } });
    expect(session.metadata).toEqual({ a: 1, c: 3 });
    // The output reserve is capped at a quarter of the window: min(16384, 32000, 16000).
    expect(session.status.usable).toBe(64_000 - 16_000);
  });

  it('rejects an empty patch and an invalid policy patch with 400', async () => {
    await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody('s-badpatch') });
    expect(
      (await api.request({ method: 'PATCH', url: '/v1/sessions/s-badpatch', payload: {} })).statusCode,
    ).toBe(400);
    const bad = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/s-badpatch',
      payload: { policy: { pruning: { protectTokens: -5 } } },
    });
    expect(bad.statusCode).toBe(400);
    const after = await api.request({ method: 'GET', url: '/v1/sessions/s-badpatch' });
    expect(after.json().policy).toEqual({});
  });

  it('deletes a session (204), after which it is gone (404)', async () => {
    await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody('s-delete') });
    expect((await api.request({ method: 'DELETE', url: '/v1/sessions/s-delete' })).statusCode).toBe(204);
    const gone = await api.request({ method: 'GET', url: '/v1/sessions/s-delete' });
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toEqual({ error: { code: 'not_found', message: 'session not found' } });
    expect((await api.request({ method: 'DELETE', url: '/v1/sessions/s-delete' })).statusCode).toBe(404);
  });
});

describe('tenancy and auth', () => {
  it("answers 404 for another tenant's session, for every verb", async () => {
    await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody('s-private') });
    for (const [method, url, payload] of [
      ['GET', '/v1/sessions/s-private', undefined],
      ['PATCH', '/v1/sessions/s-private', { metadata: { x: 1 } }],
      ['DELETE', '/v1/sessions/s-private', undefined],
      ['GET', '/v1/sessions/s-private/messages', undefined],
      ['GET', '/v1/sessions/s-private/context', undefined],
      ['POST', '/v1/sessions/s-private/messages', { messages: [{ role: 'user', parts: [] }] }],
    ] as const) {
      const response = await api.request({ method, url, payload, key: TENANT_B_KEY });
      expect(response.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await api.request({ method: 'GET', url: '/v1/sessions/s-private' })).statusCode).toBe(200);
  });

  it('lets two tenants use the same session id independently', async () => {
    const a = await api.request({ method: 'POST', url: '/v1/sessions', payload: createBody('shared-id') });
    const b = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: createBody('shared-id', { metadata: { owner: 'b' } }),
      key: TENANT_B_KEY,
    });
    expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
    expect((await api.request({ method: 'GET', url: '/v1/sessions/shared-id' })).json().metadata).toEqual({});
  });

  it.each([
    ['no key', null],
    ['an unknown key', 'not-a-key'],
  ])('answers 401 with %s', async (_label, key) => {
    const response = await api.request({ method: 'GET', url: '/v1/sessions/anything', key });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('unauthorized');
  });

  it('serves probes and the API description without a key', async () => {
    expect((await api.request({ method: 'GET', url: '/healthz', key: null })).json()).toEqual({
      status: 'ok',
    });
    const openapi = (await api.request({ method: 'GET', url: '/openapi.json', key: null })).json();
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sessions',
        '/v1/sessions/{id}',
        '/v1/sessions/{id}/messages',
        '/v1/sessions/{id}/messages/{messageId}',
        '/v1/sessions/{id}/context',
      ]),
    );
    expect(openapi.components.schemas).toHaveProperty('Session');
    const docs = await api.request({ method: 'GET', url: '/docs', key: null });
    expect([200, 302]).toContain(docs.statusCode);
  });
});
