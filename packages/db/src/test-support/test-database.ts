/**
 * What tests of every workspace need from the database layer (`@compactor/db/testing`): a
 * per-file database cloned from the migrated template, a session row inserted as the API inserts
 * one, and messages appended as the API appends them. It lives here rather than in `@compactor/testing` so that package stays below
 * `db`: db's own tests use `@compactor/testing`, and a dependency back would be a cycle.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, inject } from 'vitest';
import { resolveModelInfo, type PolicyInput } from '@compactor/core';
import { TEST_DATABASE_PREFIX, databaseUrlFor, withAdmin } from '@compactor/testing';
import { createDatabase, type Database, type Db } from '../client';
import { newId } from '../ids';
import { createScratchDatabase, dropScratchDatabase } from '../scratch-database';
import type { SessionRow } from '../mappers';
import { insertSession } from '../queries/sessions';

export { appendTestMessages } from './append-test-messages';

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
      createScratchDatabase(client, name, { purpose: 'test file', template: inject('templateDatabase') }),
    );
    const url = databaseUrlFor(adminUrl(), name);
    state = { name, url, database: createDatabase(url, { max: 5, applicationName: 'compactor-test' }) };
  });

  afterAll(async () => {
    if (!state) return;
    await state.database.close();
    const { name } = state;
    await withAdmin(adminUrl(), (client) => dropScratchDatabase(client, name));
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

/**
 * A session row (no messages yet) inserted exactly as the API inserts one, for the stub
 * summarizer model with this context window (default 32,000 tokens).
 */
export async function insertTestSession(
  db: Db,
  options: { tenantId: string; policy?: PolicyInput; contextWindow?: number },
): Promise<SessionRow> {
  const model = resolveModelInfo({
    id: 'stub-summarizer',
    provider: 'stub',
    contextWindow: options.contextWindow ?? 32_000,
    maxOutputTokens: 4_000,
  });
  const session = await insertSession(db, {
    tenantId: options.tenantId,
    id: newId('ses'),
    modelId: model.id,
    provider: model.provider,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxOutputTokens,
    inputLimit: model.inputLimit,
    policy: options.policy ?? {},
    createHash: 'test',
  });
  if (!session) throw new Error('session insert failed');
  return session;
}
