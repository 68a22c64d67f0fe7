/**
 * Scratch databases: the ones Compactor's demo, replay, benchmarks and tests create to throw
 * away. Each is marked when created (`COMMENT ON DATABASE`), and only a marked database is ever
 * dropped: on a Postgres shared with others, a database that merely has the same name
 * (`compactor_demo`, `compactor_test_…`) is someone else's, and dropping it is refused.
 */
import type pg from 'pg';
import { quoteIdent } from './migrate';

/** How a scratch database's comment begins. */
export const SCRATCH_DATABASE_MARK = 'compactor-scratch';

/** An admin connection (to the server's `postgres` database) that can create and drop databases. */
export type AdminClient = Pick<pg.ClientBase, 'query'>;

/** A database of that name exists, and Compactor did not create it: it is never dropped. */
export class NotScratchDatabaseError extends Error {
  override readonly name = 'NotScratchDatabaseError';
  constructor(readonly database: string) {
    super(
      `refusing to drop database "${database}": Compactor did not create it (it has no ` +
        `"${SCRATCH_DATABASE_MARK}" comment), so it may hold someone else's data. Choose another ` +
        `name, or drop it yourself if it is yours.`,
    );
  }
}

/** Creates database `name` (from `template` when given) and marks it as Compactor's scratch database. */
export async function createScratchDatabase(
  client: AdminClient,
  name: string,
  { purpose, template }: { purpose: string; template?: string },
): Promise<void> {
  const from = template === undefined ? '' : ` template ${quoteIdent(template)}`;
  await client.query(`create database ${quoteIdent(name)}${from}`);
  await markScratchDatabase(client, name, purpose);
}

/** Marks an existing database, created by this process a moment ago, as a scratch database. */
export async function markScratchDatabase(client: AdminClient, name: string, purpose: string): Promise<void> {
  const comment = `${SCRATCH_DATABASE_MARK}: ${purpose}, created ${new Date().toISOString()}`;
  await client.query(`comment on database ${quoteIdent(name)} is ${quoteLiteral(comment)}`);
}

/** Whether `name` exists and is marked as a scratch database (null when it does not exist). */
export async function isScratchDatabase(client: AdminClient, name: string): Promise<boolean | null> {
  const result = await client.query<{ comment: string | null }>(
    `select shobj_description(oid, 'pg_database') as comment from pg_database where datname = $1`,
    [name],
  );
  const row = result.rows[0];
  if (!row) return null;
  return row.comment?.startsWith(SCRATCH_DATABASE_MARK) ?? false;
}

/**
 * Drops scratch database `name` (and its connections); nothing when it does not exist. Throws
 * {@link NotScratchDatabaseError}, dropping nothing, when it exists unmarked.
 */
export async function dropScratchDatabase(client: AdminClient, name: string): Promise<boolean> {
  const scratch = await isScratchDatabase(client, name);
  if (scratch === null) return false;
  if (!scratch) throw new NotScratchDatabaseError(name);
  await client.query(`drop database if exists ${quoteIdent(name)} with (force)`);
  return true;
}

/** The scratch databases whose names start with `prefix` (unmarked ones are left out). */
export async function scratchDatabasesNamed(client: AdminClient, prefix: string): Promise<string[]> {
  const result = await client.query<{ datname: string }>(
    `select datname from pg_database
      where starts_with(datname, $1)
        and starts_with(coalesce(shobj_description(oid, 'pg_database'), ''), $2)
      order by datname`,
    [prefix, SCRATCH_DATABASE_MARK],
  );
  return result.rows.map((row) => row.datname);
}

/** A SQL string literal (quotes doubled), for DDL that cannot take bind parameters. */
function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}
