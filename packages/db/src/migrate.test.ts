import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { databaseUrlFor } from '@compactor/testing';
import { ensureDatabase, migrateDatabase, migrationState, quoteIdent, redactUrl } from './migrate';

const created: string[] = [];
const freshUrl = () => {
  const name = `compactor_test_${inject('testRunId')}_mig_${randomBytes(3).toString('hex')}`;
  created.push(name);
  return databaseUrlFor(inject('databaseUrl'), name);
};

afterAll(async () => {
  const client = new pg.Client({ connectionString: inject('databaseUrl') });
  await client.connect();
  for (const name of created) await client.query(`drop database if exists ${quoteIdent(name)} with (force)`);
  await client.end();
});

describe('migrateDatabase', () => {
  it('creates a missing database once, even when several processes ask at the same time', async () => {
    const url = freshUrl();
    const results = await Promise.all(Array.from({ length: 5 }, () => ensureDatabase(url)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('is safe when several processes migrate the same empty database at once', async () => {
    const url = freshUrl();
    await ensureDatabase(url);
    expect(await migrationState(url)).toMatchObject({ applied: 0 });

    const results = await Promise.all(Array.from({ length: 6 }, () => migrateDatabase(url)));

    const state = await migrationState(url);
    expect(state.pending).toBe(0);
    expect(state.applied).toBe(state.known);
    // Exactly one process applied the migrations; the others found nothing left to do.
    expect(results.map((r) => r.applied).sort()).toEqual([0, 0, 0, 0, 0, state.known]);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const tables = await client.query<{ tablename: string }>(
      "select tablename from pg_tables where schemaname = 'public' order by tablename",
    );
    await client.end();
    expect(tables.rows.map((r) => r.tablename)).toEqual(
      expect.arrayContaining([
        'api_keys',
        'compaction_steps',
        'compactions',
        'messages',
        'parts',
        'sessions',
      ]),
    );
  });

  it('reports pending migrations of an unmigrated database', async () => {
    const url = freshUrl();
    await ensureDatabase(url);
    const state = await migrationState(url);
    expect(state.pending).toBe(state.known);
    expect(state.known).toBeGreaterThan(0);
  });
});

describe('redactUrl', () => {
  it.each([
    ['postgres://u:secret@h:5432/db', 'postgres://u:***@h:5432/db'],
    ['postgres://u@h/db', 'postgres://u@h/db'],
    ['not a url', '<invalid url>'],
  ])('%s → %s', (input, expected) => expect(redactUrl(input)).toBe(expected));
});
