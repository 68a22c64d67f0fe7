import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { MIGRATIONS_FOLDER, migrateDatabase, quoteIdent } from '@compactor/db';
import { TEST_DATABASE_PREFIX, databaseUrlFor, withAdmin } from '@compactor/testing';

const STALE_AFTER_SECONDS = 6 * 3600;

/**
 * The template is named after a hash of the committed migrations, so it is built once and reused
 * until a migration changes. It is built under a temporary name and renamed, so two runs racing
 * never clone a half-migrated template.
 */
export async function prepareTemplateDatabase(adminUrl: string) {
  const name = `compactor_tpl_${migrationsHash()}`;
  const runId = `${Math.floor(Date.now() / 1000)}_${randomBytes(3).toString('hex')}`;
  await withAdmin(adminUrl, async (client) => {
    await dropStaleTestDatabases(client);
    const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (exists.rowCount) return;
    const building = `${name}_build_${randomBytes(4).toString('hex')}`;
    await client.query(`create database ${quoteIdent(building)}`);
    await migrateDatabase(databaseUrlFor(adminUrl, building));
    try {
      await client.query(`alter database ${quoteIdent(building)} rename to ${quoteIdent(name)}`);
    } catch {
      await client.query(`drop database if exists ${quoteIdent(building)} with (force)`);
    }
  });
  return {
    name,
    runId,
    /** Drops what test files of this run left behind (a crashed file skips its own cleanup). */
    dropRunDatabases: () =>
      withAdmin(adminUrl, async (client) => {
        const rows = await client.query<{ datname: string }>(
          'select datname from pg_database where datname like $1',
          [`${TEST_DATABASE_PREFIX}${runId}_%`],
        );
        for (const { datname } of rows.rows) {
          await client.query(`drop database if exists ${quoteIdent(datname)} with (force)`);
        }
      }),
  };
}

function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(MIGRATIONS_FOLDER)
    .filter((f) => f.endsWith('.sql'))
    .sort()) {
    hash.update(file).update(readFileSync(join(MIGRATIONS_FOLDER, file)));
  }
  return hash.digest('hex').slice(0, 12);
}

async function dropStaleTestDatabases(client: pg.Client): Promise<void> {
  const rows = await client.query<{ datname: string }>(
    'select datname from pg_database where datname like $1',
    [`${TEST_DATABASE_PREFIX}%`],
  );
  const now = Date.now() / 1000;
  for (const { datname } of rows.rows) {
    const createdAt = Number(datname.slice(TEST_DATABASE_PREFIX.length).split('_')[0]);
    if (Number.isFinite(createdAt) && now - createdAt > STALE_AFTER_SECONDS) {
      await client.query(`drop database if exists ${quoteIdent(datname)} with (force)`);
    }
  }
}
