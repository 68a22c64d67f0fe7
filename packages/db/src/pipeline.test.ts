import pg from 'pg';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from './client';
import { executePipelined } from './pipeline';
import { executePrepared } from './prepared';
import { useTestDatabase } from './test-support/test-database';

const t = useTestDatabase();
// One connection: every pipeline below runs on the same one, so what pg remembers about the
// connection's prepared statements is exercised across them.
let single: Database;

beforeAll(async () => {
  single = createDatabase(t.url, { max: 1 });
  await t.db.execute(sql`create table pipeline_probe (id int primary key, note text, at timestamptz)`);
});
afterAll(async () => single.close());

const insert = (id: number, note: string) =>
  sql`insert into pipeline_probe (id, note, at) values (${id}, ${note}, ${new Date('2026-01-02T03:04:05.678Z')})
      returning id, note, at`;
const count = () => sql`select count(*)::int as n from pipeline_probe`;
const backendPid = () => sql`select pg_backend_pid() as pid`;

describe('executePipelined', () => {
  it('runs the statements in order in one transaction: each sees the ones before it', async () => {
    const [inserted, counted, txids] = await executePipelined(single.db, [
      insert(1, 'first'),
      count(),
      sql`select txid_current_if_assigned()::text as txid`,
    ]);
    expect(counted!.rows).toEqual([{ n: 1 }]);
    // One transaction: the insert assigned it an id that the third statement still sees.
    expect(txids!.rows[0]!.txid).not.toBeNull();
    // Rows come back as executePrepared returns them (a timestamp as drizzle's text).
    const [reread] = (
      await executePrepared(single.db, sql`select id, note, at from pipeline_probe where id = 1`)
    ).rows;
    expect(inserted!.rows).toEqual([reread]);
    expect(typeof inserted!.rows[0]!.at).toBe('string');
  });

  it('rolls everything back when a statement fails; the pool then hands out a working connection', async () => {
    const before = (await executePrepared<{ n: number }>(single.db, count())).rows[0]!.n;
    // The second statement violates the primary key after the first one inserted.
    await expect(executePipelined(single.db, [insert(2, 'second'), insert(1, 'duplicate')])).rejects.toThrow(
      pg.DatabaseError,
    );
    expect((await executePrepared<{ n: number }>(single.db, count())).rows[0]!.n).toBe(before);
    // The same statements again, twice on one connection (parsed by the first, reused by the second).
    const [first] = await executePipelined(single.db, [insert(2, 'second'), count()]);
    const [second] = await executePipelined(single.db, [insert(4, 'fourth'), count()]);
    expect([...first!.rows, ...second!.rows]).toMatchObject([{ id: 2 }, { id: 4 }]);
  });

  it('a statement that does not parse fails the pipeline and writes nothing', async () => {
    await expect(
      executePipelined(single.db, [
        insert(3, 'third'),
        sql`select no_such_column from pipeline_probe`,
        count(),
      ]),
    ).rejects.toThrow(/no_such_column/);
    const [inserted, counted] = await executePipelined(single.db, [insert(3, 'third'), count()]);
    expect(inserted!.rows[0]).toMatchObject({ id: 3, note: 'third' });
    expect(counted!.rows[0]!.n).toBe(4);
  });

  it('a reader never sees the first statement without the last', async () => {
    // The pipeline inserts, then sleeps in its last statement; a reader meanwhile sees nothing.
    const running = executePipelined(single.db, [insert(10, 'held'), sql`select pg_sleep(0.3)`]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const during = await t.db.execute(sql`select count(*)::int as n from pipeline_probe where id = 10`);
    expect(during.rows[0]).toEqual({ n: 0 });
    await running;
    const after = await t.db.execute(sql`select count(*)::int as n from pipeline_probe where id = 10`);
    expect(after.rows[0]).toEqual({ n: 1 });
  });

  it('the same statement twice in one pipeline is parsed once', async () => {
    // A text no other test sends, so this connection has not parsed it yet.
    const twice = (id: number) =>
      sql`insert into pipeline_probe (id, note) values (${id}, 'sent twice in one pipeline') returning id`;
    const [first, second] = await executePipelined(single.db, [twice(30), twice(31)]);
    expect([...first!.rows, ...second!.rows]).toEqual([{ id: 30 }, { id: 31 }]);
  });

  it('a value pg cannot send fails the pipeline before anything is sent, without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await expect(
        executePipelined(single.db, [insert(40, 'sent?'), sql`select ${{ big: 10n }}::jsonb as j`]),
      ).rejects.toThrow(/BigInt/);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
    const stored = await executePrepared(
      single.db,
      sql`select count(*)::int as n from pipeline_probe where id = 40`,
    );
    expect(stored.rows[0]).toEqual({ n: 0 });
  });

  it('refuses a connection left inside a transaction (its Sync would commit nothing)', async () => {
    const client = await single.pool.connect();
    await client.query('begin');
    client.release();
    await expect(executePipelined(single.db, [insert(50, 'joined')])).rejects.toThrow(/inside a transaction/);
    // That connection was discarded: the next one commits.
    await executePipelined(single.db, [insert(50, 'committed')]);
    const stored = await t.db.execute(sql`select note from pipeline_probe where id = 50`);
    expect(stored.rows).toEqual([{ note: 'committed' }]);
  });

  it('is rolled back, not run to its end, when its client dies on the way', async () => {
    // A separate pool: its one connection is cut from this side, as a SIGKILLed worker's would be.
    const dying = createDatabase(t.url, { max: 1 });
    const running = executePipelined(dying.db, [insert(60, 'orphaned'), sql`select pg_sleep(3)`]);
    const failed = expect(running).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 150));
    const [connection] = (
      dying.pool as unknown as { _clients: Array<{ connection: { stream: { destroy(): void } } }> }
    )._clients;
    connection!.connection.stream.destroy();
    await failed;
    // The server notices within client_connection_check_interval (250 ms) and aborts the
    // pipeline: its backend is gone well before the 3 s sleep would have ended, nothing written.
    const started = Date.now();
    let backends = 1;
    while (backends > 0 && Date.now() - started < 2_000) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const { rows } = await t.db.execute<{ n: number }>(
        sql`select count(*)::int as n from pg_stat_activity where query like '%pg_sleep(3)%' and pid <> pg_backend_pid()`,
      );
      backends = rows[0]!.n;
    }
    expect(backends).toBe(0);
    const stored = await t.db.execute(sql`select count(*)::int as n from pipeline_probe where id = 60`);
    expect(stored.rows[0]).toEqual({ n: 0 });
    await dying.close().catch(() => undefined);
  });

  it('a lost connection fails the pipeline, and the pool replaces the connection', async () => {
    const pid = (await executePrepared<{ pid: number }>(single.db, backendPid())).rows[0]!.pid;
    const running = executePipelined(single.db, [insert(20, 'lost'), sql`select pg_sleep(5)`]);
    // Expected before the backend goes: it may fail before the terminating statement returns.
    const failed = expect(running).rejects.toThrow(/terminating connection/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await t.db.execute(sql`select pg_terminate_backend(${pid})`);
    await failed;
    const replaced = (await executePrepared<{ pid: number }>(single.db, backendPid())).rows[0]!.pid;
    expect(replaced).not.toBe(pid);
    const [inserted] = await executePipelined(single.db, [insert(20, 'again')]);
    expect(inserted!.rows[0]).toMatchObject({ id: 20, note: 'again' });
  });
});
