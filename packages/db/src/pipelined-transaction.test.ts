import pg from 'pg';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from './client';
import { pipelinedTransaction } from './pipelined-transaction';
import { executePrepared } from './prepared';
import { useTestDatabase } from './test-support/test-database';

const t = useTestDatabase();
// One connection: whether a transaction leaves it fit for the next one shows on the next call.
let single: Database;

beforeAll(async () => {
  single = createDatabase(t.url, { max: 1 });
  await t.db.execute(sql`create table tx_probe (id int primary key, note text)`);
});
afterAll(async () => single.close());

const insert = (id: number, note: string) =>
  sql`insert into tx_probe (id, note) values (${id}, ${note}) returning id, note`;
const stored = async (id: number) =>
  (await t.db.execute(sql`select note from tx_probe where id = ${id}`)).rows as Array<{ note: string }>;
const backendPid = () => sql`select pg_backend_pid() as pid`;
const txid = () => sql`select txid_current()::text as txid`;

describe('pipelinedTransaction', () => {
  it('runs round trips in one transaction, the last carrying the COMMIT; nothing shows before it', async () => {
    const result = await pipelinedTransaction(single.db, async (send) => {
      const [inserted, first] = await send([insert(1, 'first'), txid()]);
      expect(inserted!.rows).toEqual([{ id: 1, note: 'first' }]);
      // Between the round trips, another connection sees nothing yet.
      expect(await stored(1)).toEqual([]);
      const [second, again] = await send([insert(2, 'decided after the first'), txid()], { commit: true });
      expect(second!.rows).toHaveLength(1);
      return { first: first!.rows[0]!.txid, again: again!.rows[0]!.txid };
    });
    expect(result.again).toBe(result.first);
    expect([...(await stored(1)), ...(await stored(2))]).toHaveLength(2);
  });

  it('commits in a round trip of its own when the body returns without the COMMIT', async () => {
    await pipelinedTransaction(single.db, async (send) => {
      await send([insert(3, 'committed at the end')]);
    });
    expect(await stored(3)).toEqual([{ note: 'committed at the end' }]);
  });

  it('rolls back when the body throws, and the connection is reused', async () => {
    const pid = (await executePrepared<{ pid: number }>(single.db, backendPid())).rows[0]!.pid;
    await expect(
      pipelinedTransaction(single.db, async (send) => {
        await send([insert(4, 'undone')]);
        throw new Error('decided against it');
      }),
    ).rejects.toThrow(/decided against it/);
    expect(await stored(4)).toEqual([]);
    expect((await executePrepared<{ pid: number }>(single.db, backendPid())).rows[0]!.pid).toBe(pid);
  });

  it('rolls back everything when a statement of a later round trip fails; the pool hands out a working connection', async () => {
    await expect(
      pipelinedTransaction(single.db, async (send) => {
        await send([insert(5, 'first round trip')]);
        await send([insert(1, 'duplicate key')], { commit: true });
      }),
    ).rejects.toThrow(pg.DatabaseError);
    expect(await stored(5)).toEqual([]);
    await pipelinedTransaction(single.db, async (send) => {
      await send([insert(5, 'again')], { commit: true });
    });
    expect(await stored(5)).toEqual([{ note: 'again' }]);
  });

  it('refuses a statement after the COMMIT', async () => {
    await expect(
      pipelinedTransaction(single.db, async (send) => {
        await send([insert(6, 'committed')], { commit: true });
        await send([insert(7, 'too late')]);
      }),
    ).rejects.toThrow(/after the COMMIT/);
    expect(await stored(6)).toEqual([{ note: 'committed' }]);
    expect(await stored(7)).toEqual([]);
  });
});
