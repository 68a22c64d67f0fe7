/**
 * The MCP server, driven by the SDK's own client over both transports against a real API: stdio
 * (the `compactor-mcp` bin as a child process, calling the API over HTTP with a tenant's key) and
 * streamable HTTP (`POST /mcp` on the API, as the key's tenant). Every tool does what its route
 * does; another tenant's session and compaction are not found exactly like missing ones; hostile
 * arguments are refused and write nothing.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recallAnswerText } from '@compactor/client';
import { TOOL_NAMES } from '@compactor/mcp';
import { TENANT_A_KEY, TENANT_B_KEY, useTestApi } from '../test-support/api';
import { useInProcessWorker } from '../test-support/in-process-worker';
import { compactedSession, type CompactedSession } from '../test-support/mcp-session';

const api = useTestApi();
const worker = useInProcessWorker(api);
const BIN = fileURLToPath(new URL('../../../../packages/mcp/bin/compactor-mcp.mjs', import.meta.url));

let baseUrl = '';
const clients: Client[] = [];
beforeAll(async () => {
  baseUrl = await api.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

type Transport = 'stdio' | 'http';

/** An SDK client connected over `transport` with `key` (none: no key at all). */
async function connect(transport: Transport, key: string | null): Promise<Client> {
  const client = new Client({ name: 'compactor-mcp-test', version: '1.0.0' });
  clients.push(client);
  if (transport === 'http') {
    const headers: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), { requestInit: { headers } }),
    );
  } else {
    const env: Record<string, string> = {
      COMPACTOR_URL: baseUrl,
      ...(key === null ? {} : { COMPACTOR_API_KEY: key }),
    };
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [BIN], env, stderr: 'pipe' }),
    );
  }
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return { text, isError: result.isError === true };
}

const get = (url: string) => api.request({ method: 'GET', url });

/** A first word of six letters or more in `text`: something a search of it finds. */
function wordOf(text: string): string {
  const word = /[A-Za-z]{6,}/.exec(text)?.[0];
  if (!word) throw new Error('no word to search for');
  return word;
}

describe.each<Transport>(['stdio', 'http'])('over %s', (transport) => {
  let readable: CompactedSession;
  let revertible: CompactedSession;
  let client: Client;
  let tenantB: Client;
  beforeAll(async () => {
    readable = await compactedSession(api, worker, `${transport}-read`);
    revertible = await compactedSession(api, worker, `${transport}-revert`);
    client = await connect(transport, TENANT_A_KEY);
    tenantB = await connect(transport, TENANT_B_KEY);
  });

  it('lists the six tools, each taking a sessionId', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const tool of tools) {
      expect(tool.description?.length, tool.name).toBeGreaterThan(40);
      expect(tool.inputSchema.required, tool.name).toContain('sessionId');
    }
  });

  it('recall gives back the output the compaction cleared, verbatim', async () => {
    const answer = await call(client, 'recall', { sessionId: readable.id, callId: readable.clearedCallId });
    expect(answer).toEqual({ text: readable.clearedOutput, isError: false });
  });

  it('recall_media shows an image the session holds by the id its marker names, to its tenant only', async () => {
    const png = Buffer.alloc(40, 3);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).copy(png, 0);
    png.write('IHDR', 12, 'ascii');
    png.writeUInt32BE(320, 16);
    png.writeUInt32BE(200, 20);
    const session = `${transport}-media`;
    await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { id: session, model: { id: 'gpt-4o' } },
    });
    const url = `data:image/png;base64,${png.toString('base64')}`;
    const posted = await api.request({
      method: 'POST',
      url: `/v1/sessions/${session}/messages`,
      payload: { messages: [{ role: 'user', parts: [{ type: 'file', mime: 'image/png', url }] }] },
    });
    expect(posted.statusCode, posted.body).toBe(201);
    const mediaId = createHash('sha256').update(png).digest('hex').slice(0, 16);
    const result = (await client.callTool({
      name: 'recall_media',
      arguments: { sessionId: session, mediaId },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.content[1]).toEqual({ type: 'image', data: png.toString('base64'), mimeType: 'image/png' });
    expect(await call(tenantB, 'recall_media', { sessionId: session, mediaId })).toEqual({
      isError: true,
      text: 'session not found',
    });
    expect(await call(client, 'recall_media', { sessionId: session, mediaId: '0'.repeat(16) })).toEqual({
      isError: true,
      text: 'media not found',
    });
  });

  it('search_history finds passages out of view as the recall route does', async () => {
    const q = wordOf(readable.clearedOutput);
    const route = (await get(`/v1/sessions/${readable.id}/recall?q=${q}&limit=3`)).json();
    expect(route.results.length).toBeGreaterThan(0);
    const answer = await call(client, 'search_history', { sessionId: readable.id, query: q, limit: 3 });
    expect(answer).toEqual({ text: recallAnswerText(route), isError: false });
  });

  it('session_status is the status GET /v1/sessions/:id serves', async () => {
    const answer = await call(client, 'session_status', { sessionId: readable.id });
    expect(answer.isError).toBe(false);
    const session = (await get(`/v1/sessions/${readable.id}`)).json();
    expect(JSON.parse(answer.text)).toEqual({
      sessionId: readable.id,
      model: {
        id: 'gpt-4o',
        contextWindow: session.model.contextWindow,
        maxOutputTokens: session.model.maxOutputTokens,
      },
      status: session.status,
    });
  });

  it('revert_compaction undoes the compaction and compact_now starts one, as the API shows', async () => {
    const { id, compactionId } = revertible;
    const before = (await get(`/v1/sessions/${id}`)).json().status;
    const reverted = await call(client, 'revert_compaction', { sessionId: id, compactionId });
    expect(reverted.isError, reverted.text).toBe(false);
    expect(JSON.parse(reverted.text).compaction).toMatchObject({ id: compactionId, status: 'reverted' });
    expect((await get(`/v1/compactions/${compactionId}`)).json().status).toBe('reverted');
    const after = (await get(`/v1/sessions/${id}`)).json().status;
    expect(after.lastCompaction).toMatchObject({ id: compactionId, status: 'reverted' });
    expect(after.tokens).toBeGreaterThan(before.tokens);
    // Not the latest completed one any more: refused, in the API's words with its reason.
    const again = await call(client, 'revert_compaction', { sessionId: id, compactionId });
    expect(again.isError).toBe(true);
    expect(again.text).toMatch(/not_completed/);

    const compacted = await call(client, 'compact_now', {
      sessionId: id,
      instructions: 'keep the CSV decisions',
    });
    expect(compacted.isError, compacted.text).toBe(false);
    const { compaction, created } = JSON.parse(compacted.text);
    expect(created).toBe(true);
    const listed = (await get(`/v1/sessions/${id}/compactions`)).json().compactions;
    expect(listed[0]).toMatchObject({ id: compaction.id, reason: 'manual', status: 'pending' });
    expect((await get(`/v1/sessions/${id}`)).json().status.activeCompaction).toMatchObject({
      id: compaction.id,
    });
    // Asked again while it is pending: the same compaction, nothing new.
    const joined = JSON.parse((await call(client, 'compact_now', { sessionId: id })).text);
    expect(joined).toMatchObject({ created: false, compaction: { id: compaction.id } });
  });

  it('another tenant finds nothing: the same "not found" as a missing session or compaction', async () => {
    const counts = await api.counts();
    const missing = { sessionId: 'no-such-session' };
    const cases: Array<[string, Record<string, unknown>]> = [
      ['recall', { callId: readable.clearedCallId }],
      ['search_history', { query: wordOf(readable.clearedOutput) }],
      ['session_status', {}],
      ['compact_now', {}],
    ];
    for (const [tool, args] of cases) {
      const theirs = await call(tenantB, tool, { ...args, sessionId: readable.id });
      const none = await call(client, tool, { ...args, ...missing });
      expect(theirs, tool).toEqual({ isError: true, text: 'session not found' });
      expect(none, tool).toEqual(theirs);
    }
    const theirs = await call(tenantB, 'revert_compaction', {
      sessionId: readable.id,
      compactionId: readable.compactionId,
    });
    expect(theirs).toEqual({ isError: true, text: 'compaction not found' });
    const none = await call(client, 'revert_compaction', {
      sessionId: readable.id,
      compactionId: 'cmp_missing',
    });
    expect(none).toEqual(theirs);
    // A compaction of another session of the same tenant is not this session's.
    const elsewhere = await call(client, 'revert_compaction', {
      sessionId: readable.id,
      compactionId: revertible.compactionId,
    });
    expect(elsewhere).toEqual(theirs);
    expect(await api.counts()).toEqual(counts);
    expect((await get(`/v1/compactions/${readable.compactionId}`)).json().status).toBe('completed');
  });

  it('refuses hostile arguments with a readable error and writes nothing', async () => {
    const counts = await api.counts();
    const cases: Array<[string, Record<string, unknown>]> = [
      ['session_status', { sessionId: 'has spaces' }],
      ['session_status', { sessionId: 'x'.repeat(201) }],
      ['session_status', {}],
      ['recall', { sessionId: readable.id, callId: 'nul\u0000byte' }],
      ['search_history', { sessionId: readable.id, query: 'q'.repeat(501) }],
      ['search_history', { sessionId: readable.id, query: 'csv', limit: 1000 }],
      ['compact_now', { sessionId: readable.id, instructions: 'i'.repeat(9000) }],
      ['revert_compaction', { sessionId: readable.id, compactionId: '..' }],
    ];
    for (const [tool, args] of cases) {
      const answer = await call(client, tool, args);
      expect(answer.isError, `${tool} ${JSON.stringify(args).slice(0, 80)}`).toBe(true);
      expect(answer.text).toMatch(/invalid|validation/i);
    }
    expect(await api.counts()).toEqual(counts);
  });
});

describe('without a valid key', () => {
  it('POST /mcp is a 401, like every route', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    for (const key of [null, 'not-a-key']) {
      const response = await api.request({ method: 'POST', url: '/mcp', payload: initialize, key });
      expect(response.statusCode).toBe(401);
      expect(response.json().error.code).toBe('unauthorized');
    }
    await expect(connect('http', null)).rejects.toThrow(/401|unauthorized/i);
  });

  it('the stdio server answers each call with the refusal the API gives that key', async () => {
    for (const key of [null, 'not-a-key']) {
      const refused = await api.request({ method: 'GET', url: '/v1/sessions/stdio-read', key });
      expect(refused.statusCode).toBe(401);
      const client = await connect('stdio', key);
      const answer = await call(client, 'session_status', { sessionId: 'stdio-read' });
      expect(answer).toEqual({ isError: true, text: refused.json().error.message });
    }
  });
});

describe('POST /mcp as HTTP', () => {
  it('refuses what is not an MCP request with a 4xx and writes nothing', async () => {
    const counts = await api.counts();
    const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const listTools = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: { x: 'a'.repeat(300_000) },
    });
    const cases: Array<[string, Record<string, string>, string, number]> = [
      ['not JSON', json, '{"jsonrpc": "2.0", "method": ', 400],
      ['an object that is no message', json, '{}', 400],
      ['a string', json, '"x"', 400],
      ['null', json, 'null', 400],
      ['an empty batch', json, '[]', 400],
      ['over the body limit', json, huge, 413],
      ['not accepting the answer', { 'content-type': 'application/json' }, listTools, 406],
      ['not JSON by its content type', { ...json, 'content-type': 'text/plain' }, listTools, 415],
    ];
    for (const [what, headers, payload, status] of cases) {
      const response = await api.request({ method: 'POST', url: '/mcp', headers, payload });
      expect(response.statusCode, what).toBe(status);
    }
    expect(await api.counts()).toEqual(counts);
  });

  it('answers GET and DELETE with 405: the server is stateless', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      const response = await api.request({ method, url: '/mcp' });
      expect(response.statusCode).toBe(405);
      expect(response.headers.allow).toBe('POST');
    }
  });
});
