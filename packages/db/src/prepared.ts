import { createHash } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { DbOrTx } from './client';

const dialect = new PgDialect();
const names = new Map<string, string>();

/** The statement's name: derived from its text, so one name never stands for two texts. */
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `compactor_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * Runs `query` as a named, server-side prepared statement: each pooled connection parses and
 * plans it once, then Postgres reuses the plan (its generic plan, once it has seen the custom
 * ones cost no less). For the per-append status query that is 0.7 ms instead of 6.5 ms of
 * planning and execution.
 *
 * Only for statements whose text is fixed: values must be parameters, never spliced in, and
 * the text must not grow with the input (no per-row VALUES lists), or every connection would
 * keep one prepared statement per shape. The queries that use it are written so that a generic
 * plan is as good as a custom one (bounded range scans that do not depend on estimates).
 */
export async function executePrepared<Row extends Record<string, unknown>>(
  db: DbOrTx,
  query: SQL,
): Promise<{ rows: Row[] }> {
  const { name, text, params } = compileNamed(query);
  const statement = db._.session.prepareQuery({ sql: text, params }, undefined, name, false);
  return (await statement.execute()) as { rows: Row[] };
}

/** A statement compiled for the wire, named by its text (see {@link statementName}). */
export interface NamedStatement {
  name: string;
  text: string;
  params: unknown[];
}

export function compileNamed(query: SQL): NamedStatement {
  const compiled = dialect.sqlToQuery(query);
  return { name: statementName(compiled.sql), text: compiled.sql, params: compiled.params };
}
