import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { TEST_DATABASE_PREFIX } from '@compactor/testing';
import { dropDatabase, recreateScratchDatabase, withDatabase } from './services';

const url = withDatabase(
  inject('databaseUrl'),
  `${TEST_DATABASE_PREFIX}${inject('testRunId')}_scratch_${randomBytes(4).toString('hex')}`,
);

async function query<T extends pg.QueryResultRow>(target: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: target });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

afterAll(() => dropDatabase(url));

describe('recreateScratchDatabase', () => {
  it('creates the database empty, its sessions committing without waiting for the WAL flush', async () => {
    const elsewhere = () => query(inject('databaseUrl'), 'show synchronous_commit');
    const before = await elsewhere();
    await recreateScratchDatabase(url);
    await query(url, 'create table leftover (x int)');
    // Again: a fresh, empty database, still asynchronous.
    await recreateScratchDatabase(url);
    expect(await query(url, "select to_regclass('leftover') as found")).toEqual([{ found: null }]);
    expect(await query(url, 'show synchronous_commit')).toEqual([{ synchronous_commit: 'off' }]);
    // Only there: the server's other databases keep theirs.
    expect(await elsewhere()).toEqual(before);
  });
});
