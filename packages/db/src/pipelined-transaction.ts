import { sql, type SQL } from 'drizzle-orm';
import type { Db } from './client';
import { sendPipeline } from './pipeline';

/**
 * Sends statements inside a {@link pipelinedTransaction}: one round trip per call, their results
 * in order. `commit` sends the COMMIT after them, in the same round trip.
 */
export type TransactionRoundTrip = (
  queries: SQL[],
  options?: { commit?: boolean },
) => Promise<Array<{ rows: Record<string, unknown>[] }>>;

const BEGIN = sql`begin`;
const COMMIT = sql`commit`;
const ROLLBACK = sql`rollback`;

/**
 * A transaction whose statements go out pipelined (as `executePipelined`'s do), in as few
 * round trips as the decisions between them allow: `body` sends with `send`, each call one round
 * trip (BEGIN goes with the first), and its last call may carry the COMMIT (`{ commit: true }`),
 * so a decision made in JS between two batches costs one round trip more than the implicit
 * transaction of one batch. Returning without that commit commits in a round trip of its own;
 * throwing rolls back. Locks are held from the statement that takes them to the COMMIT, across
 * `body`'s decisions: keep those free of waits on anything but this connection.
 *
 * A client that dies between round trips leaves an open transaction that Postgres rolls back
 * when the connection ends, as it does a pipeline cut off before its Sync.
 */
export async function pipelinedTransaction<T>(
  db: Db,
  body: (send: TransactionRoundTrip) => Promise<T>,
): Promise<T> {
  const client = await db.$client.connect();
  // Set when the connection itself failed: it is discarded then, never rolled back and reused.
  let broken: Error | undefined;
  // Held in an object: `send` changes it, which a narrowed local would hide from the checks below.
  const tx: { state: 'none' | 'open' | 'committed' } = { state: 'none' };
  const send: TransactionRoundTrip = async (queries, options = {}) => {
    if (tx.state === 'committed') throw new Error('pipelinedTransaction: a statement after the COMMIT');
    const begin = tx.state === 'none';
    const statements = [...(begin ? [BEGIN] : []), ...queries, ...(options.commit ? [COMMIT] : [])];
    try {
      const results = await sendPipeline(client, statements);
      tx.state = options.commit ? 'committed' : 'open';
      return results.slice(begin ? 1 : 0, begin ? queries.length + 1 : queries.length);
    } catch (error) {
      broken = error as Error;
      throw error;
    }
  };
  try {
    // Postgres commits only what this transaction began: a connection left inside another would
    // make BEGIN a warning and this COMMIT that one's.
    if (client.getTransactionStatus() !== 'I') {
      broken = new Error('pipelinedTransaction: the pooled connection is inside a transaction');
      throw broken;
    }
    const result = await body(send);
    if (tx.state !== 'committed') await send([], { commit: true });
    return result;
  } catch (error) {
    if (!broken && tx.state === 'open') {
      await sendPipeline(client, [ROLLBACK]).catch((rollbackError: unknown) => {
        broken = rollbackError as Error;
      });
    }
    throw error;
  } finally {
    // As pg-pool's own `pool.query` does, a connection that saw an error is not reused.
    client.release(broken);
  }
}
