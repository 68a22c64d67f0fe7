import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { readMigrationFiles } from 'drizzle-orm/migrator';

/** Absolute path of the committed SQL migrations (`packages/db/migrations`), resolved from this module. */
export const MIGRATIONS_FOLDER = join(dirname(fileURLToPath(import.meta.url)), '..', 'migrations');

/** Any fixed 64-bit number works; this one spells "compactr" and is shared by every process. */
const MIGRATION_LOCK_KEY = 0x636f6d7061637472n;
const MIGRATIONS_SCHEMA = 'drizzle';
const MIGRATIONS_TABLE = '__drizzle_migrations';

/**
 * Applies the committed migrations. Safe when several processes start at once: they queue on a
 * session-level advisory lock, and each one that gets it applies only what is still missing.
 */
export async function migrateDatabase(url: string): Promise<{ applied: number }> {
  const client = new pg.Client({ connectionString: url, application_name: 'compactor-migrate' });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    try {
      const before = await appliedMigrationCount(client);
      await migrate(drizzle({ client }), {
        migrationsFolder: MIGRATIONS_FOLDER,
        migrationsSchema: MIGRATIONS_SCHEMA,
        migrationsTable: MIGRATIONS_TABLE,
      });
      return { applied: (await appliedMigrationCount(client)) - before };
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]);
    }
  } finally {
    await client.end();
  }
}

/** Migrations applied to the database, committed in the repository (`known`), and still missing. */
export interface MigrationState {
  applied: number;
  known: number;
  pending: number;
}

/** How many committed migrations the database lacks; lets an app refuse to start unmigrated. */
export async function migrationState(url: string): Promise<MigrationState> {
  const known = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).length;
  const client = new pg.Client({ connectionString: url, application_name: 'compactor-migrate' });
  await client.connect();
  try {
    const applied = await appliedMigrationCount(client);
    return { applied, known, pending: Math.max(0, known - applied) };
  } finally {
    await client.end();
  }
}

async function appliedMigrationCount(client: pg.Client): Promise<number> {
  const table = await client.query<{ exists: boolean }>('select to_regclass($1) is not null as exists', [
    `${MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`,
  ]);
  if (!table.rows[0]?.exists) return 0;
  const result = await client.query<{ count: number }>(
    `select count(*)::int as count from ${MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`,
  );
  return result.rows[0]?.count ?? 0;
}

/**
 * Creates the database named in `url` when it does not exist and the server lets us (connects
 * to the `postgres` maintenance database to do it). Returns whether it created it.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error(`database URL has no database name: ${redactUrl(url)}`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), application_name: 'compactor-migrate' });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await client.query(`create database ${quoteIdent(name)}`);
      return true;
    } catch (error) {
      // Another process created it between our check and our create: 42P04 when it had
      // finished, 23505 (pg_database's unique index) when both creates ran at the same time.
      const code = (error as { code?: string }).code;
      if (code === '42P04' || code === '23505') return false;
      throw error;
    }
  } finally {
    await client.end();
  }
}

/** Quotes a Postgres identifier (embedded quotes doubled), for DDL that cannot take bind parameters. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The URL without its password, for logs and error messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<invalid url>';
  }
}
