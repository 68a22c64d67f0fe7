/**
 * Where a local stack (the demo, the replay, a benchmark) keeps its data: a database it drops and
 * recreates on the server DATABASE_URL names, and a queue prefix whose keys it deletes. Both are
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
}

/**
 * The placement from `chosen` (an option's value, else the variable's, else `defaults`),
 * validated: the database is a plain lower-case identifier, not one the server needs, and not
 * the database `databaseUrl` itself names (that one may hold real data; the scratch one is
 * dropped); the queue prefix has no characters a key pattern would expand.
 */
export function scratchPlacement(
  chosen: { database?: string | undefined; queuePrefix?: string | undefined },
  defaults: ScratchPlacement,
  databaseUrl: string,
  names: { database: string; queuePrefix: string },
): ScratchPlacement {
  const database = chosen.database ?? defaults.database;
  const queuePrefix = chosen.queuePrefix ?? defaults.queuePrefix;
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
  return { database, queuePrefix };
}

function databaseOf(url: string): string | null {
  try {
    return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || null;
  } catch {
    return null;
  }
}
