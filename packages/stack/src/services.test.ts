import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { TEST_DATABASE_PREFIX } from '@compactor/testing';
import {
  checkPostgres,
  checkRedis,
  dropDatabase,
  recreateScratchDatabase,
  ServiceMissingError,
  withDatabase,
} from './services';
import { NotScratchDatabaseError } from '@compactor/db';

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

describe('a database Compactor did not create', () => {
  const theirs = withDatabase(
    inject('databaseUrl'),
    `${TEST_DATABASE_PREFIX}${inject('testRunId')}_theirs_${randomBytes(4).toString('hex')}`,
  );
  const name = new URL(theirs).pathname.slice(1);
  const server = inject('databaseUrl');
  afterAll(() => query(server, `drop database if exists "${name}" with (force)`));

  it('is neither dropped nor recreated, with a message that names it and says why', async () => {
    // Someone else's database on a shared server: same kind of name, no scratch mark.
    await query(server, `create database "${name}"`);
    await query(theirs, 'create table their_data (x int)');
    for (const attempt of [() => dropDatabase(theirs), () => recreateScratchDatabase(theirs)]) {
      const error = await attempt().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(NotScratchDatabaseError);
      expect((error as Error).message).toContain(`refusing to drop database "${name}"`);
      expect((error as Error).message).toContain('Compactor did not create it');
    }
    expect(await query(theirs, "select to_regclass('their_data') as found")).toEqual([
      { found: 'their_data' },
    ]);
  });

  it('is dropped once marked as scratch, and a missing one is no error', async () => {
    await recreateScratchDatabase(url);
    await dropDatabase(url);
    expect(
      await query(server, `select 1 from pg_database where datname = '${new URL(url).pathname.slice(1)}'`),
    ).toEqual([]);
    await dropDatabase(url);
  });
});

describe('checkPostgres and checkRedis', () => {
  it('give the server version of a running service', async () => {
    expect(await checkPostgres(inject('databaseUrl'))).toMatch(/^\d+/);
    expect(await checkRedis(inject('redisUrl'))).toMatch(/^\d+\.\d+/);
  });

  // Nothing listens on port 1.
  it.each([
    ['PostgreSQL', () => checkPostgres('postgres://postgres:secret@127.0.0.1:1/compactor'), 'pg_ctlcluster'],
    ['Redis', () => checkRedis('redis://127.0.0.1:1'), 'redis-server --daemonize yes'],
  ])('say %s is missing and, for the local default, how to start it', async (what, check, command) => {
    const error = await check().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ServiceMissingError);
    const message = (error as Error).message;
    expect(message).toContain(`${what} is not reachable at`);
    expect(message).toContain('bash scripts/ensure-services.sh');
    expect(message).toContain(command);
    expect(message).not.toContain('secret');
  });

  it('point at the variable, not at this machine, when the URL came from it', async () => {
    const error = await checkRedis('redis://127.0.0.1:1', true).then(
      () => null,
      (e: unknown) => e,
    );
    expect((error as Error).message).toContain('REDIS_URL is set: check that server');
    expect((error as Error).message).not.toContain('ensure-services');
  });
});
