import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpBackend } from './backend';
import { createMcpServer, type McpServerOptions } from './tools';

/**
 * One MCP request over streamable HTTP, stateless: a server and a transport for this request
 * alone, closed when its response is. Stateless because every request is authenticated on its
 * own and the tools keep nothing between calls, so any API replica can answer any request and
 * no MCP session can outlive the key that opened it. `body` is the JSON-RPC message(s) the
 * caller's framework already parsed; answers are plain JSON (`enableJsonResponse`): no tool
 * streams.
 */
export async function handleMcpHttpPost(
  request: IncomingMessage,
  response: ServerResponse,
  body: unknown,
  backend: McpBackend,
  options: McpServerOptions = {},
): Promise<void> {
  if (Array.isArray(body) && body.length === 0) {
    // An empty batch is no request at all (JSON-RPC 2.0); the transport would accept it as one.
    response.writeHead(400, { 'content-type': 'application/json' });
    response.end(JSON.stringify(EMPTY_BATCH));
    return;
  }
  const server = createMcpServer(backend, options);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  response.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(request, response, body);
}

/**
 * The answer to GET and DELETE: a stateless server has no stream to open and no session to end
 * (the SDK's clients take a 405 on GET to mean exactly that).
 */
export const METHOD_NOT_ALLOWED = {
  status: 405,
  headers: { allow: 'POST', 'content-type': 'application/json' },
  body: {
    jsonrpc: '2.0',
    error: { code: -32000, message: 'Method not allowed: this MCP server is stateless, POST only.' },
    id: null,
  },
} as const;

const EMPTY_BATCH = {
  jsonrpc: '2.0',
  error: { code: -32600, message: 'Invalid Request: an empty batch' },
  id: null,
};
