/**
 * A session's cache model (`model.pricing`, `model.cache`): the catalog's for known models,
 * overridable at creation and by PATCH (null: back to the catalog), shown resolved; hostile
 * values are refused with nothing written.
 */
import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';

const api = useTestApi();

const SONNET_PRICING = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const OWN_PRICING = { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25 };

const create = (id: string, model: Record<string, unknown>) =>
  api.request({ method: 'POST', url: '/v1/sessions', payload: { id, model } });
const patch = (id: string, model: Record<string, unknown>) =>
  api.request({ method: 'PATCH', url: `/v1/sessions/${id}`, payload: { model } });

async function storedOverrides(id: string): Promise<{ pricing: unknown; cache: unknown } | undefined> {
  const { rows } = await api.database.database.pool.query(
    'select model_pricing as pricing, model_cache as cache from sessions where id = $1',
    [id],
  );
  return rows[0];
}

describe('a session’s cache model', () => {
  it('shows the catalog’s prices and cache for a known model, none for an unknown one', async () => {
    const sonnet = await create('cm-sonnet', { id: 'claude-sonnet-4-5' });
    expect(sonnet.statusCode).toBe(201);
    expect(sonnet.json().model).toMatchObject({
      pricing: SONNET_PRICING,
      cache: { kind: 'explicit', ttlSeconds: 300 },
    });
    expect(await storedOverrides('cm-sonnet')).toEqual({ pricing: null, cache: null });
    const unknown = await create('cm-unknown', { id: 'in-house-model' });
    expect(unknown.json().model).toMatchObject({
      pricing: null,
      cache: { kind: 'automatic', ttlSeconds: 300 },
    });
  });

  it('stores the overrides as stated, and a PATCH with null returns each to the catalog', async () => {
    const cache = { kind: 'explicit', ttlSeconds: 3_600 };
    const created = await create('cm-own', { id: 'claude-sonnet-4-5', pricing: OWN_PRICING, cache });
    expect(created.json().model).toMatchObject({ pricing: OWN_PRICING, cache });
    expect(await storedOverrides('cm-own')).toEqual({ pricing: OWN_PRICING, cache });

    // A patch of other model fields keeps them.
    const limits = await patch('cm-own', { maxOutputTokens: 8_000 });
    expect(limits.json().model).toMatchObject({ maxOutputTokens: 8_000, pricing: OWN_PRICING, cache });

    const cleared = await patch('cm-own', { pricing: null });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json().model).toMatchObject({ pricing: SONNET_PRICING, cache });
    expect(await storedOverrides('cm-own')).toEqual({ pricing: null, cache });
    const both = await patch('cm-own', { cache: null, pricing: OWN_PRICING });
    expect(both.json().model).toMatchObject({
      pricing: OWN_PRICING,
      cache: { kind: 'explicit', ttlSeconds: 300 },
    });
  });

  it('drops the overrides with a change of model unless the patch states them', async () => {
    await create('cm-switch', { id: 'claude-sonnet-4-5', pricing: OWN_PRICING });
    const switched = await patch('cm-switch', { id: 'gpt-4o' });
    expect(switched.json().model).toMatchObject({
      id: 'gpt-4o',
      pricing: { input: 2.5, output: 10, cacheRead: 1.25, cacheWrite: 2.5 },
      cache: { kind: 'automatic', ttlSeconds: 300 },
    });
    const stated = await patch('cm-switch', { id: 'in-house-model', pricing: OWN_PRICING });
    expect(stated.json().model).toMatchObject({ id: 'in-house-model', pricing: OWN_PRICING });
  });

  it('counts the overrides in the create body: the same id with other prices is a conflict', async () => {
    expect((await create('cm-idem', { id: 'gpt-4o', pricing: OWN_PRICING })).statusCode).toBe(201);
    expect((await create('cm-idem', { id: 'gpt-4o', pricing: OWN_PRICING })).statusCode).toBe(200);
    const other = await create('cm-idem', { id: 'gpt-4o', pricing: { ...OWN_PRICING, input: 1.5 } });
    expect(other.statusCode).toBe(409);
  });

  it.each<[string, Record<string, unknown>]>([
    ['a negative price', { pricing: { ...OWN_PRICING, cacheRead: -0.1 } }],
    ['a price past the cap', { pricing: { ...OWN_PRICING, output: 1e308 } }],
    ['a price as a string', { pricing: { ...OWN_PRICING, input: '3' } }],
    ['a missing price', { pricing: { input: 1, output: 2, cacheRead: 0.1 } }],
    ['an extra pricing key', { pricing: { ...OWN_PRICING, batch: 0.5 } }],
    ['prices as an array', { pricing: [1, 2, 0.1, 1.25] }],
    ['an unknown cache kind', { cache: { kind: 'implicit', ttlSeconds: 300 } }],
    ['a fractional TTL', { cache: { kind: 'explicit', ttlSeconds: 1.5 } }],
    ['a negative TTL', { cache: { kind: 'explicit', ttlSeconds: -1 } }],
    ['a TTL past seven days', { cache: { kind: 'explicit', ttlSeconds: 604_801 } }],
    ['a TTL past int4', { cache: { kind: 'explicit', ttlSeconds: 2_147_483_648 } }],
    ['an extra cache key', { cache: { kind: 'explicit', ttlSeconds: 300, breakpoints: 4 } }],
  ])('refuses %s with 400 and writes nothing, on create and on PATCH', async (_name, override) => {
    const id = `cm-bad-${Object.keys(override)[0]}`;
    const before = await api.counts();
    const created = await create(id, { id: 'claude-sonnet-4-5', ...override });
    expect(created.statusCode, created.body).toBe(400);
    expect(created.json().error.code).toBe('validation_error');
    expect(await api.counts()).toEqual(before);

    const target = `cm-bad-target-${_name.replace(/\W+/g, '-')}`;
    expect((await create(target, { id: 'claude-sonnet-4-5' })).statusCode).toBe(201);
    const patched = await patch(target, override);
    expect(patched.statusCode, patched.body).toBe(400);
    expect(await storedOverrides(target)).toEqual({ pricing: null, cache: null });
  });

  it('accepts the edges: free prices, a TTL of 0 and of seven days', async () => {
    const free = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    const edge = await create('cm-edge', {
      id: 'gpt-4o',
      pricing: free,
      cache: { kind: 'none', ttlSeconds: 0 },
    });
    expect(edge.statusCode).toBe(201);
    expect(edge.json().model).toMatchObject({ pricing: free, cache: { kind: 'none', ttlSeconds: 0 } });
    const week = await patch('cm-edge', { cache: { kind: 'automatic', ttlSeconds: 604_800 } });
    expect(week.json().model.cache).toEqual({ kind: 'automatic', ttlSeconds: 604_800 });
  });
});
