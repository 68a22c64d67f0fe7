import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';

/**
 * Hand-written statements (several tables in one round trip, data-modifying CTEs) that still
 * return rows typed like drizzle's own: `selectList` names a table's columns under a prefix, and
 * `rowMapper` turns such a raw row back into the table's `$inferSelect` shape with each column's
 * own driver mapping (bigint as number, numeric as number, timestamps as Date).
 */
export function selectList(table: PgTable, alias: string, prefix: string): SQL {
  // Built once per table, alias and prefix: hot statements name the same columns on every call.
  let lists = selectLists.get(table);
  if (!lists) selectLists.set(table, (lists = new Map()));
  const key = `${alias}\u0000${prefix}`;
  let list = lists.get(key);
  if (list === undefined) {
    list = Object.values(getTableColumns(table))
      .map((column) => `${alias}."${column.name}" as "${prefix}${column.name}"`)
      .join(', ');
    lists.set(key, list);
  }
  return sql.raw(list);
}

const selectLists = new WeakMap<PgTable, Map<string, string>>();

export function rowMapper<T extends PgTable>(
  table: T,
  prefix: string,
): (raw: Record<string, unknown>) => T['$inferSelect'] {
  const columns = Object.entries(getTableColumns(table)).map(
    ([key, column]) => [key, `${prefix}${column.name}`, column] as const,
  );
  return (raw) => {
    const row: Record<string, unknown> = {};
    for (const [key, name, column] of columns) {
      const value = raw[name];
      row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    return row as T['$inferSelect'];
  };
}
