/**
 * Where a local stack (the demo, the replay, a benchmark) keeps its data: a scratch database it
 * creates (and drops) on the server DATABASE_URL names, and a queue prefix whose keys it deletes. Both are
 * the caller's to choose (an option or a variable); the names are checked before anything is
 * dropped, so a typo cannot reach another database.
 */

/** An option or variable naming a place the stack would wipe: the message names it. */
export class PlacementError extends Error {
  override readonly name = 'PlacementError';
}

/** Databases a server needs for itself: never a stack's scratch database. */
const SERVER_DATABASES = new Set(['postgres', 'template0', 'template1']);
/** An unquoted Postgres identifier, short enough not to be truncated (63 bytes). */
const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** What BullMQ keys may start with: no spaces or glob characters (the prefix's keys are deleted by pattern). */
const QUEUE_PREFIX = /^[A-Za-z0-9_{}:.-]{1,100}$/;

export interface ScratchPlacement {
  /** The scratch database's name. */
  database: string;
  queuePrefix: string;
  /**
   * Which of the two this run named for itself (neither option nor variable chose it): unique to
   * the run, and the run's to drop and delete when it ends. A chosen one is kept for a look.
   */
  perRun?: { database: boolean; queuePrefix: boolean };
}

/** A name part unique to one run: its start (UTC, to the second) and a random suffix. */
export function runStamp(now = new Date(), random = Math.random): string {
  const time = now.toISOString().replace(/\D/g, '').slice(0, 14);
  return `${time}_${Math.floor(random() * 0x10000)
    .toString(16)
    .padStart(4, '0')}`;
}

/** `{compactor-demo}` → `{compactor-demo-<stamp>}`: the hash tag keeps one Redis Cluster slot. */
function perRunPrefix(prefix: string, stamp: string): string {
  const run = stamp.replace('_', '-');
  return prefix.endsWith('}') ? `${prefix.slice(0, -1)}-${run}}` : `${prefix}-${run}`;
}

/**
 * The placement from `chosen` (an option's value, else the variable's), or else one of this
 * run's own: `defaults` with `stamp` added (`compactor_demo_20261207103000_0f3a`), so two runs
 * on a shared server never wipe each other's. Validated: the database is a plain lower-case
 * identifier, not one the server needs, and not the database `databaseUrl` itself names (that
 * one may hold real data; the scratch one is dropped); the queue prefix has no characters a key
 * pattern would expand. Only a database Compactor created is ever dropped (`dropScratchDatabase`).
 */
export function scratchPlacement(
  chosen: { database?: string | undefined; queuePrefix?: string | undefined },
  defaults: ScratchPlacement,
  databaseUrl: string,
  names: { database: string; queuePrefix: string },
  stamp = runStamp(),
): ScratchPlacement {
  const database = chosen.database ?? `${defaults.database}_${stamp}`;
  const queuePrefix = chosen.queuePrefix ?? perRunPrefix(defaults.queuePrefix, stamp);
  if (!DATABASE_NAME.test(database))
    throw new PlacementError(
      `${names.database} must be a lower-case name of letters, digits and _ (at most 63), got ${JSON.stringify(database)}`,
    );
  if (SERVER_DATABASES.has(database))
    throw new PlacementError(`${names.database}: ${database} is the server's own database, choose another`);
  if (database === databaseOf(databaseUrl))
    throw new PlacementError(
      `${names.database}: ${database} is the database DATABASE_URL names; this one is dropped and recreated, choose another`,
    );
  if (!QUEUE_PREFIX.test(queuePrefix))
    throw new PlacementError(
      `${names.queuePrefix} must be 1-100 of letters, digits and _{}:.- , got ${JSON.stringify(queuePrefix)}`,
    );
  return {
    database,
    queuePrefix,
    perRun: { database: chosen.database === undefined, queuePrefix: chosen.queuePrefix === undefined },
  };
}

function databaseOf(url: string): string | null {
  try {
    return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || null;
  } catch {
    return null;
  }
}
