import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';

/** The readiness probe's round trip. */
export async function pingDatabase(db: DbOrTx): Promise<void> {
  await db.execute(sql`select 1`);
}
