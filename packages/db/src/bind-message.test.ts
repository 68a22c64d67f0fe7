import { sql } from 'drizzle-orm';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindMessagePieces } from './bind-message';
import { createDatabase, type Database } from './client';
import { executePipelined } from './pipeline';
import { useTestDatabase } from './test-support/test-database';

const t = useTestDatabase();
let single: Database;
beforeAll(() => {
  single = createDatabase(t.url, { max: 1 });
});
afterAll(async () => single.close());

/** jsonb's binary input: a version byte, then the JSON text. */
const jsonb = (value: unknown) => Buffer.concat([Buffer.from([1]), Buffer.from(JSON.stringify(value))]);

describe('bindMessagePieces', () => {
  it('leaves messages without a large value to pg', () => {
    expect(bindMessagePieces('s', ['text', null, Buffer.alloc(100)])).toBeNull();
  });

  it('writes the bytes pg-protocol writes, the large values as they are (not copied)', () => {
    const large = jsonb({ text: 'é🚀x'.repeat(40_000) });
    const values = ['a text ✓', null, large, Buffer.from([1, 2, 3]), large];
    const pieces = bindMessagePieces('compactor_0123', values)!;
    expect(pieces.filter((piece) => piece === large)).toHaveLength(2);
    expect(Buffer.concat(pieces)).toEqual(serialize.bind({ statement: 'compactor_0123', values }));
  });

  it('binds a large jsonb value that Postgres reads whole, in a pipeline', async () => {
    const text = 'a line of a long tool output ✓\n'.repeat(20_000);
    const [row] = await executePipelined(single.db, [
      sql`select (${jsonb({ text })}::jsonb ->> 'text') = ${text} as same, ${null}::text is null as nothing,
                 length(${jsonb({ text })}::jsonb ->> 'text') as length`,
    ]);
    expect(row!.rows).toEqual([{ same: true, nothing: true, length: text.length }]);
  });
});
