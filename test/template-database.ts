import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import {
  MIGRATIONS_FOLDER,
  createScratchDatabase,
  dropScratchDatabase,
  migrateDatabase,
  quoteIdent,
  scratchDatabasesNamed,
} from '@compactor/db';
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
    // Marked as a scratch database; the mark stays with it through the rename.
    await createScratchDatabase(client, building, { purpose: 'test template' });
    await migrateDatabase(databaseUrlFor(adminUrl, building));
    try {
      await client.query(`alter database ${quoteIdent(building)} rename to ${quoteIdent(name)}`);
    } catch {
      await dropScratchDatabase(client, building);
    }
  });
  return {
    name,
    runId,
    /** Drops what test files of this run left behind (a crashed file skips its own cleanup). */
    dropRunDatabases: () =>
      withAdmin(adminUrl, async (client) => {
        for (const datname of await scratchDatabasesNamed(client, `${TEST_DATABASE_PREFIX}${runId}_`))
          await dropScratchDatabase(client, datname);
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

/**
 * Drops the test databases that crashed runs left behind, more than six hours old: only scratch
 * databases (marked when created), never an unmarked one that merely has the tests' prefix.
 */
export async function dropStaleTestDatabases(client: pg.Client, now = Date.now()): Promise<string[]> {
  const dropped: string[] = [];
  for (const datname of await scratchDatabasesNamed(client, TEST_DATABASE_PREFIX)) {
    const createdAt = Number(datname.slice(TEST_DATABASE_PREFIX.length).split('_')[0]);
    if (Number.isFinite(createdAt) && now / 1000 - createdAt > STALE_AFTER_SECONDS) {
      await dropScratchDatabase(client, datname);
      dropped.push(datname);
    }
  }
  return dropped;
}
