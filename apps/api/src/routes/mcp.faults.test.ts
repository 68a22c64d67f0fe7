/**
 * The MCP mount when something fails under it: a fault of ours is a tool error that says only
 * that the tool failed, and its log line names the tool but none of the call's arguments; a
 * database that cannot be reached is a tool error in the words of the API's 503.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase } from '@compactor/db';
import { useTestDatabase } from '@compactor/db/testing';
import { TENANT_A_KEY } from '../test-support/api';
import { capturedLogger } from '../test-support/log-capture';
import { buildServerOn, type ServerOn } from '../test-support/server-on';

const database = useTestDatabase();
const opened: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const closable of opened.reverse()) await closable.close();
});

/** An SDK client of `served`'s `/mcp`, as tenant A. */
async function mcpClient(served: ServerOn): Promise<Client> {
  const url = await served.app.listen({ port: 0, host: '127.0.0.1' });
  const client = new Client({ name: 'compactor-mcp-faults', version: '1.0.0' });
  const headers = { authorization: `Bearer ${TENANT_A_KEY}` };
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers } }));
  opened.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return { text, isError: result.isError === true };
}

describe('POST /mcp when something fails', () => {
  it('a fault of ours: the tool failed, and the log names the tool but not its arguments', async () => {
    const { logger, lines } = capturedLogger();
    const served = await buildServerOn(database.db, 'mcp-faults', { logger });
    opened.push(served);
    const client = await mcpClient(served);
    // This file's own database, broken the way a bad deploy would break it: a table gone.
    await database.database.pool.query('alter table sessions rename to sessions_away');
    try {
      const args = { sessionId: 'private-session-7', query: 'confidential wording' };
      const answer = await call(client, 'search_history', args);
      expect(answer).toEqual({ isError: true, text: 'search_history failed: internal error in Compactor' });
      const failures = lines.filter((line) => line.includes('mcp tool failed'));
      expect(failures).toHaveLength(1);
      expect(JSON.parse(failures[0]!)).toMatchObject({ tool: 'search_history', tenantId: 'tenant-a' });
      for (const line of lines) {
        expect(line).not.toContain('private-session-7');
        expect(line).not.toContain('confidential wording');
      }
    } finally {
      await database.database.pool.query('alter table sessions_away rename to sessions');
    }
  });

  it('Postgres unreachable: the tool says so in the words of the API', async () => {
    const unreachable = createDatabase('postgres://postgres@127.0.0.1:1/compactor', {
      max: 1,
      connectTimeoutMs: 500,
      statementTimeoutMs: 1_000,
    });
    opened.push(unreachable);
    const served = await buildServerOn(unreachable.db, 'mcp-unreachable');
    opened.push(served);
    const client = await mcpClient(served);
    const answer = await call(client, 'session_status', { sessionId: 'any' });
    expect(answer).toEqual({ isError: true, text: 'the database is unavailable; retry later' });
  });
});
