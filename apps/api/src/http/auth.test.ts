import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '@compactor/db/testing';
import { runKeysCommand } from '../cli/keys';
import { createAuthenticator, OPEN_TENANT } from './auth';
import { ApiError } from './errors';

const database = useTestDatabase();

describe('createAuthenticator', () => {
  it('runs open (default tenant) with no key anywhere, and closes as soon as the CLI creates one', async () => {
    let now = 0;
    const auth = createAuthenticator(database.db, new Map(), () => now);
    expect(await auth.isOpen()).toBe(true);
    expect(await auth.tenantFor(undefined)).toBe(OPEN_TENANT);

    const lines: string[] = [];
    expect(await runKeysCommand(['create', 'acme', 'ci'], database.url, (l) => lines.push(l))).toBe(0);
    const key = lines[0]!.split('\n')[1]!;
    expect(key).toMatch(/^cpk_[\w-]{43}$/);

    now += 2500; // past the key-table cache
    expect(await auth.isOpen()).toBe(false);
    expect(await auth.tenantFor(`Bearer ${key}`)).toBe('acme');
    await expect(auth.tenantFor(undefined)).rejects.toMatchObject({ status: 401 });

    // Only the hash is stored.
    const stored = await database.database.pool.query('select key_hash from api_keys');
    expect(stored.rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored.rows)).not.toContain(key);

    const listed: string[] = [];
    await runKeysCommand(['list'], database.url, (l) => listed.push(l));
    const id = listed[0]!.split('\t')[0]!;
    expect(await runKeysCommand(['revoke', id], database.url, () => undefined)).toBe(0);
    await expect(auth.tenantFor(`Bearer ${key}`)).rejects.toBeInstanceOf(ApiError);
  });

  it('maps API_KEYS keys to their tenants and rejects anything else', async () => {
    const auth = createAuthenticator(database.db, new Map([['k1', 'globex']]));
    expect(await auth.tenantFor('Bearer k1')).toBe('globex');
    expect(await auth.tenantFor('bearer   k1  ')).toBe('globex');
    for (const header of [undefined, 'k1', 'Basic k1', 'Bearer', 'Bearer k2']) {
      await expect(auth.tenantFor(header)).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    }
  });

  it("takes the key from x-api-key (as Anthropic's SDK sends it) when there is no Authorization header", async () => {
    const auth = createAuthenticator(
      database.db,
      new Map([
        ['k1', 'globex'],
        ['k2', 'initech'],
      ]),
    );
    expect(await auth.tenantFor(undefined, 'k1')).toBe('globex');
    expect(await auth.tenantFor(undefined, ' k2 ')).toBe('initech');
    expect(await auth.tenantFor('', 'k1')).toBe('globex');
    // Authorization, when sent, is the one that counts: a bad bearer is not rescued by x-api-key.
    expect(await auth.tenantFor('Bearer k2', 'k1')).toBe('initech');
    await expect(auth.tenantFor('Bearer nope', 'k1')).rejects.toMatchObject({ status: 401 });
    for (const header of [undefined, '', 'k3', 'k1 k2', ['k1', 'k1']]) {
      await expect(auth.tenantFor(undefined, header)).rejects.toMatchObject({
        status: 401,
        code: 'unauthorized',
      });
    }
  });

  it('prints usage for an unknown command', async () => {
    const lines: string[] = [];
    expect(await runKeysCommand(['frobnicate'], database.url, (l) => lines.push(l))).toBe(2);
    expect(lines[0]).toMatch(/^usage:/);
  });
});
