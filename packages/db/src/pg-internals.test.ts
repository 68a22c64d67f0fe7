/**
 * What `pipeline.ts` takes from node-postgres beyond its documented API: a connection's wire
 * methods and its record of parsed statements, `utils.prepareValue`, and `Result`'s row parsing;
 * and what `breaker.ts` takes: a connection's socket, destroyed to fail its statement at once.
 * pg is pinned to one version (package.json) so a release cannot change them unseen; upgrading
 * it means this file passes on the new version first.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './errors';
import { useTestDatabase } from './test-support/test-database';

const require = createRequire(import.meta.url);
const t = useTestDatabase();
let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: t.url });
  await client.connect();
});
afterAll(async () => client.end());

/** The connection behind a client (not in pg's typings). */
const connectionOf = (c: pg.Client) => (c as unknown as { connection: Record<string, unknown> }).connection;

describe('the pg internals the pipeline builds on', () => {
  it('pg is the one version every workspace pins, exactly', () => {
    const installed = (require('pg/package.json') as { version: string }).version;
    for (const workspace of ['db', 'stack', 'testing']) {
      const manifest = JSON.parse(
        readFileSync(new URL(`../../${workspace}/package.json`, import.meta.url), 'utf8'),
      ) as { dependencies?: Record<string, string> };
      expect(manifest.dependencies?.pg, `packages/${workspace}`).toBe(installed);
    }
  });

  it('a connection has the wire methods a submittable writes with, and records parsed statements', async () => {
    const connection = connectionOf(client);
    for (const method of ['parse', 'bind', 'describe', 'execute', 'sync', 'sendCopyFail'])
      expect(typeof connection[method], method).toBe('function');
    const stream = connection.stream as Record<string, unknown>;
    for (const method of ['cork', 'uncork', 'write']) expect(typeof stream[method], method).toBe('function');
    expect(client.getTransactionStatus()).toBe('I');

    await client.query({ name: 'pg_internals_probe', text: 'select $1::int + 1 as n', values: [41] });
    const parsed = connection.parsedStatements as Record<string, string>;
    expect(parsed.pg_internals_probe).toBe('select $1::int + 1 as n');
  });

  it('utils.prepareValue turns values into what the Bind message carries', () => {
    const { prepareValue } = (pg as unknown as { utils: { prepareValue: (v: unknown) => unknown } }).utils;
    expect(prepareValue(42)).toBe('42');
    expect(prepareValue(null)).toBeNull();
    expect(prepareValue(['a', 'b"c'])).toBe('{"a","b\\"c"}');
    expect(prepareValue({ a: 1 })).toBe('{"a":1}');
    const bytes = Buffer.from([1, 2, 3]);
    expect(prepareValue(bytes)).toBe(bytes);
  });

  it('Result parses rows with the type parsers it is given and counts the command', () => {
    const result = new (
      pg.Result as unknown as new (
        rowMode: undefined,
        types: { getTypeParser: (id: number) => (value: string) => unknown },
      ) => {
        addFields(fields: unknown): void;
        parseRow(fields: unknown): Record<string, unknown>;
        addRow(row: Record<string, unknown>): void;
        addCommandComplete(message: unknown): void;
        rows: unknown[];
        command: string;
        rowCount: number;
      }
    )(undefined, { getTypeParser: (id) => (value) => `${id}:${value}` });
    result.addFields([{ name: 'n', dataTypeID: 23, format: 'text' }]);
    result.addRow(result.parseRow(['7']));
    result.addCommandComplete({ text: 'SELECT 1' });
    expect(result.rows).toEqual([{ n: '23:7' }]);
    expect([result.command, result.rowCount]).toEqual(['SELECT', 1]);
  });

  it("destroying a connection's socket fails the statement on it at once, as unavailable (the breaker's way out)", async () => {
    const doomed = new pg.Client({ connectionString: t.url });
    doomed.on('error', () => undefined);
    await doomed.connect();
    const sleeping = doomed.query('select pg_sleep(30)');
    (connectionOf(doomed).stream as { destroy(): void }).destroy();
    const error = await sleeping.then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});
