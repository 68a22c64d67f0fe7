import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { handleMcpHttpPost, METHOD_NOT_ALLOWED, sessionsBackend } from '@compactor/mcp';
import type { TenantLimits } from '@compactor/sessions';
import { loggableError } from '@compactor/db';
import type { ApiResources } from '../resources';

/** The most a JSON-RPC message to the MCP tools can need: five small tools, no uploads. */
const MCP_BODY_LIMIT = 256 * 1024;

/**
 * `POST /mcp`: Compactor's MCP server over streamable HTTP (`@compactor/mcp`), as the tenant the
 * request's key authenticated (the API's auth hook, like every route). Hidden from the OpenAPI
 * document: its body is JSON-RPC, described in docs/MCP.md.
 */
export function mcpRoutes(resources: ApiResources, { limits }: { limits: TenantLimits }): FastifyPluginAsync {
  return async (app) => {
    app.post('/mcp', { schema: { hide: true }, bodyLimit: MCP_BODY_LIMIT }, async (request, reply) => {
      const backend = sessionsBackend(resources, limits, request.tenantId);
      // The transport writes the response itself, from the raw request and the parsed body.
      reply.hijack();
      try {
        await handleMcpHttpPost(request.raw, reply.raw, request.body, backend, {
          onUnexpectedError: (error, tool) =>
            request.log.error({ err: loggableError(error), tool }, 'mcp tool failed'),
        });
      } catch (error) {
        // Hijacked: Fastify's error handler can no longer answer, so this does.
        request.log.error({ err: loggableError(error) }, 'mcp request failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json' });
          reply.raw.end(JSON.stringify(INTERNAL_ERROR));
        }
      }
    });

    const notAllowed = async (_request: unknown, reply: FastifyReply) =>
      reply.code(METHOD_NOT_ALLOWED.status).headers(METHOD_NOT_ALLOWED.headers).send(METHOD_NOT_ALLOWED.body);
    app.get('/mcp', { schema: { hide: true } }, notAllowed);
    app.delete('/mcp', { schema: { hide: true } }, notAllowed);
  };
}

const INTERNAL_ERROR = { jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null };
