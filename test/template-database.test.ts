/**
 * The sweep of test databases that crashed runs left behind drops only scratch databases the
 * tests created and marked: on a shared server, an unmarked database with the tests' prefix is
 * someone else's and stays.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { isScratchDatabase, markScratchDatabase, quoteIdent } from '@compactor/db';
import { TEST_DATABASE_PREFIX, withAdmin } from '@compactor/testing';
import { dropStaleTestDatabases } from './template-database';

const SEVEN_HOURS_AGO = Math.floor(Date.now() / 1000) - 7 * 3600;
const suffix = randomBytes(4).toString('hex');
const theirs = `${TEST_DATABASE_PREFIX}${SEVEN_HOURS_AGO}_theirs_${suffix}`;
const ours = `${TEST_DATABASE_PREFIX}${SEVEN_HOURS_AGO}_ours_${suffix}`;
const recent = `${TEST_DATABASE_PREFIX}${Math.floor(Date.now() / 1000)}_recent_${suffix}`;
const admin = () => inject('databaseUrl');

afterAll(() =>
  withAdmin(admin(), async (client) => {
    for (const name of [theirs, ours, recent])
      await client.query(`drop database if exists ${quoteIdent(name)} with (force)`);
  }),
);

describe('dropStaleTestDatabases', () => {
  it('drops old scratch databases and leaves unmarked and recent ones', async () => {
    await withAdmin(admin(), async (client) => {
      for (const name of [theirs, ours, recent]) await client.query(`create database ${quoteIdent(name)}`);
      await markScratchDatabase(client, ours, 'test file');
      await markScratchDatabase(client, recent, 'test file');

      const dropped = await dropStaleTestDatabases(client);

      expect(dropped).toContain(ours);
      expect(dropped).not.toContain(theirs);
      expect(await isScratchDatabase(client, ours)).toBeNull();
      expect(await isScratchDatabase(client, theirs)).toBe(false);
      expect(await isScratchDatabase(client, recent)).toBe(true);
    });
  });
});
