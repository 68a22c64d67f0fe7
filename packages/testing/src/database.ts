import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDatabase, quoteIdent, type Database, type Db } from '@compactor/db';

/** Every database a test file clones starts with this, then the run id, so leftovers can be found. */
export const TEST_DATABASE_PREFIX = 'compactor_test_';

/** The URL of database `name` on the same server as `baseUrl`. */
export function databaseUrlFor(baseUrl: string, name: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestDatabase {
  /** Name and URL of this file's own migrated database. */
  readonly name: string;
  readonly url: string;
  /** A pool on it, opened in beforeAll and closed in afterAll. */
  readonly db: Db;
  readonly database: Database;
}

/**
 * Gives the calling test file its own database, cloned from the migrated template (fast: a file
 * copy, no migrations), and drops it afterwards. Files can therefore run in parallel.
 * Call at the top level of a test file; read the fields inside tests or hooks.
 */
export function useTestDatabase(): TestDatabase {
  let state: { name: string; url: string; database: Database } | undefined;
  const adminUrl = () => inject('databaseUrl');

  beforeAll(async () => {
    const name = `${TEST_DATABASE_PREFIX}${inject('testRunId')}_${randomBytes(4).toString('hex')}`;
    await withAdmin(adminUrl(), (client) =>
      client.query(`create database ${quoteIdent(name)} template ${quoteIdent(inject('templateDatabase'))}`),
    );
    const url = databaseUrlFor(adminUrl(), name);
    state = { name, url, database: createDatabase(url, { max: 5, applicationName: 'compactor-test' }) };
  });

  afterAll(async () => {
    if (!state) return;
    await state.database.close();
    const { name } = state;
    await withAdmin(adminUrl(), (client) =>
      client.query(`drop database if exists ${quoteIdent(name)} with (force)`),
    );
  });

  const current = () => {
    if (!state) throw new Error('useTestDatabase(): the database exists only inside tests and hooks');
    return state;
  };
  return {
    get name() {
      return current().name;
    },
    get url() {
      return current().url;
    },
    get db() {
      return current().database.db;
    },
    get database() {
      return current().database;
    },
  };
}

/** Runs `fn` with a client on the server's admin URL (creating and dropping databases). */
export async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: 'compactor-test-setup' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
