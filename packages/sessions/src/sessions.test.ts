/**
 * Sessions at the package's boundary, on a real database: idempotent creation, the refusals a
 * create or a patch can meet (model limits, policies, another body), the merges a patch does,
 * deletion and tenant isolation. The HTTP answers they become are the API's tests.
 */
import { describe, expect, it } from 'vitest';
import { countSessionsOf } from './test-support/counts';
import { Conflict, InvalidInput, SessionNotFound } from './errors';
import {
  createSession,
  createSessionWithinRate,
  getSession,
  patchSession,
  removeSession,
  requireSession,
} from './sessions';
import { TenantLimitReached, TenantLimits } from './tenant-limits';
import { newSession, SMALL_MODEL, useTestSessions } from './test-support/session-resources';

const t = useTestSessions();
const db = () => t.database.db;

describe('createSession', () => {
  it('creates a session with the model completed from the catalog, and an empty status', async () => {
    const { session, created } = await createSession(db(), 'tenant-a', {
      id: 's-new',
      model: { id: 'gpt-4o' },
      metadata: { team: 'ledger' },
    });
    expect(created).toBe(true);
    expect(session).toMatchObject({ id: 's-new', modelId: 'gpt-4o', contextWindow: 128_000 });
    const view = await getSession(db(), { tenantId: 'tenant-a', id: 's-new' });
    expect(view.metadata).toEqual({ team: 'ledger' });
    expect(view.status).toMatchObject({ tokens: 0, contextMessages: 0, activeCompaction: null });
  });

  it('is idempotent by id: the same body is the stored session, another body a Conflict', async () => {
    const body = { id: 's-idem', model: SMALL_MODEL, metadata: { a: 1 } };
    const first = await createSession(db(), 'tenant-a', body);
    const again = await createSession(db(), 'tenant-a', body);
    expect(again.created).toBe(false);
    expect(again.session.pk).toBe(first.session.pk);

    const refused = await createSession(db(), 'tenant-a', { ...body, metadata: { a: 2 } }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(Conflict);
    expect(refused).toMatchObject({
      reason: 'session_exists',
      message: 'session s-idem already exists with a different body',
    });
    expect(await countSessionsOf(db(), 'tenant-a', 's-idem')).toBe(1);
  });

  it('gives a session without an id one of its own', async () => {
    const { session, created } = await createSession(db(), 'tenant-a', { model: SMALL_MODEL });
    expect(created).toBe(true);
    expect(session.id).toMatch(/^ses_/);
  });

  it('refuses model limits that cannot work, naming the field, and writes nothing', async () => {
    const cases: Array<[Record<string, number>, string]> = [
      [{ contextWindow: 1_023 }, 'body.model.contextWindow'],
      [{ contextWindow: 8_192, maxOutputTokens: 100_000 }, 'body.model.maxOutputTokens'],
      [{ contextWindow: 8_192, inputLimit: 9_000 }, 'body.model.inputLimit'],
    ];
    for (const [limits, path] of cases) {
      const refused = await createSession(db(), 'tenant-a', {
        id: 's-limits',
        model: { id: 'gpt-4o', ...limits },
      }).catch((error: unknown) => error);
      expect(refused, path).toBeInstanceOf(InvalidInput);
      const { issues, message } = refused as InvalidInput;
      expect(issues?.[0]?.path).toBe(path);
      expect(message).toBe(`invalid request: ${path}: ${issues?.[0]?.message}`);
    }
    expect(await countSessionsOf(db(), 'tenant-a', 's-limits')).toBe(0);
  });

  it('refuses a policy that does not resolve, without naming fields it cannot know', async () => {
    const refused = await createSession(db(), 'tenant-a', {
      id: 's-bad-policy',
      model: SMALL_MODEL,
      policy: { pruning: { protectTokens: -5 } },
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidInput);
    expect((refused as InvalidInput).issues).toBeUndefined();
    expect(await countSessionsOf(db(), 'tenant-a', 's-bad-policy')).toBe(0);
  });
});

describe('createSessionWithinRate', () => {
  it('spends the rate on new sessions only, refusing past it with TenantLimitReached', async () => {
    const limits = new TenantLimits({ sessionCreatesPerMinute: 2 });
    const create = (id: string) =>
      createSessionWithinRate(db(), limits, 'tenant-rate', { id, model: SMALL_MODEL });
    await create('r-1');
    await create('r-2');
    // The same session again creates nothing: it is never refused.
    expect((await create('r-1')).created).toBe(false);
    const refused = await create('r-3').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TenantLimitReached);
    expect(refused).toMatchObject({ limit: 'session_create_rate', retryAfterSeconds: 30 });
    expect(await countSessionsOf(db(), 'tenant-rate', 'r-3')).toBe(0);
  });
});

describe('patchSession', () => {
  it('merges the model, deep-merges the policy and merges metadata, null removing a key', async () => {
    await newSession(t, 'tenant-a', 'p-merge', {
      model: { id: 'gpt-4o' },
      policy: { pruning: { protectTokens: 30_000 } },
      metadata: { a: 1, b: 2 },
    });
    const patched = await patchSession(
      db(),
      { tenantId: 'tenant-a', id: 'p-merge' },
      { model: { contextWindow: 64_000 }, policy: { auto: false }, metadata: { b: null, c: 3 } },
    );
    expect(patched.model).toMatchObject({ id: 'gpt-4o', contextWindow: 64_000, maxOutputTokens: 16_384 });
    expect(patched.policy).toEqual({ pruning: { protectTokens: 30_000 }, auto: false });
    expect(patched.effectivePolicy).toMatchObject({ auto: false, pruning: { protectTokens: 30_000 } });
    expect(patched.metadata).toEqual({ a: 1, c: 3 });
    expect(patched.status.usable).toBe(64_000 - 16_000);
  });

  it('checks a patch against the model it leaves, and leaves the session as it was when refused', async () => {
    await newSession(t, 'tenant-a', 'p-refused', { model: { id: 'gpt-4o', contextWindow: 64_000 } });
    const target = { tenantId: 'tenant-a', id: 'p-refused' };
    for (const [model, path] of [
      [{ contextWindow: 100 }, 'body.model.contextWindow'],
      [{ maxOutputTokens: 64_001 }, 'body.model.maxOutputTokens'],
      [{ inputLimit: 70_000 }, 'body.model.inputLimit'],
    ] as const) {
      const refused = await patchSession(db(), target, { model }).catch((error: unknown) => error);
      expect(refused, path).toBeInstanceOf(InvalidInput);
      expect((refused as InvalidInput).issues?.[0]?.path).toBe(path);
    }
    const policy = await patchSession(db(), target, { policy: { pruning: { protectTokens: -5 } } }).catch(
      (error: unknown) => error,
    );
    expect(policy).toBeInstanceOf(InvalidInput);
    const unchanged = await getSession(db(), target);
    expect(unchanged.model).toMatchObject({ contextWindow: 64_000, maxOutputTokens: 16_384 });
    expect(unchanged.policy).toEqual({});
  });

  it('keeps the cache overrides while the model stays, and drops them with another model', async () => {
    const cache = { kind: 'explicit' as const, ttlSeconds: 300 };
    await newSession(t, 'tenant-a', 'p-cache', { model: { ...SMALL_MODEL, cache } });
    const target = { tenantId: 'tenant-a', id: 'p-cache' };
    await patchSession(db(), target, { model: { contextWindow: 16_000 } });
    expect((await requireSession(db(), 'tenant-a', 'p-cache')).modelCache).toEqual(cache);
    await patchSession(db(), target, { model: { id: 'gpt-4o' } });
    expect((await requireSession(db(), 'tenant-a', 'p-cache')).modelCache).toBeNull();
  });
});

describe('tenancy and deletion', () => {
  it("finds no other tenant's session, for any operation, and lets tenants share an id", async () => {
    await newSession(t, 'tenant-a', 'shared', { metadata: { owner: 'a' } });
    const b = { tenantId: 'tenant-b', id: 'shared' };
    await expect(getSession(db(), b)).rejects.toBeInstanceOf(SessionNotFound);
    await expect(patchSession(db(), b, { metadata: { x: 1 } })).rejects.toBeInstanceOf(SessionNotFound);
    await expect(removeSession(t.resources, b)).rejects.toBeInstanceOf(SessionNotFound);

    await newSession(t, 'tenant-b', 'shared', { metadata: { owner: 'b' } });
    expect((await getSession(db(), b)).metadata).toEqual({ owner: 'b' });
    expect((await getSession(db(), { tenantId: 'tenant-a', id: 'shared' })).metadata).toEqual({
      owner: 'a',
    });
  });

  it('deletes a session, which is then not found, and announces it to its event streams', async () => {
    const session = await newSession(t, 'tenant-a', 'd-gone');
    const seen: string[] = [];
    const unsubscribe = await t.resources.events.subscribe(session.pk, (event) => seen.push(event.type));
    await removeSession(t.resources, { tenantId: 'tenant-a', id: 'd-gone' });
    const refused = await requireSession(db(), 'tenant-a', 'd-gone').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionNotFound);
    expect(refused).toMatchObject({ what: 'session', message: 'session not found' });
    await expect.poll(() => seen).toEqual(['session.deleted']);
    unsubscribe();
  });
});
