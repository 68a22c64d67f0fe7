/** Large parts are TOASTed with lz4 where the server has it (migration 0013): cheaper to write. */
import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/** Whether this server was built with lz4 (a column can be declared with it). */
async function serverHasLz4(): Promise<boolean> {
  const client = await t.database.pool.connect();
  try {
    await client.query('create temp table lz4_probe (x text compression lz4)');
    return true;
  } catch {
    return false;
  } finally {
    client.release();
  }
}

describe('parts compression', () => {
  it('stores a large tool output and a large text with lz4, byte for byte', async () => {
    const expected = (await serverHasLz4()) ? 'lz4' : 'pglz';
    const session = await createTestSession(t.db);
    // Compressible but not trivially: a log whose lines differ.
    const output = Array.from({ length: 20_000 }, (_, i) => `line ${i}: ok ${(i * 7919) % 1000}`).join('\n');
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_big', output)]),
      newMessage('user', [text(output.slice(0, 200_000), 50_000)]),
    ]);
    const { rows } = await t.database.pool.query<{ type: string; method: string; same: boolean }>(
      `select type, coalesce(pg_column_compression(tool_output), pg_column_compression(text)) as method,
              coalesce(tool_output, text) = $2 or coalesce(tool_output, text) = left($2, 200000) as same
       from parts where session_pk = $1 order by seq`,
      [session.pk, output],
    );
    expect(rows).toEqual([
      { type: 'tool', method: expected, same: true },
      { type: 'text', method: expected, same: true },
    ]);
  });
});
