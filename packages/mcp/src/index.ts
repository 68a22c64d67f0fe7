// @compactor/mcp: the MCP server's tools over a backend, and its two transports.
export { ToolRefusal, type McpBackend } from './backend';
export { clientBackend } from './client-backend';
export { McpEnv, parseMcpEnv } from './env';
export { handleMcpHttpPost, METHOD_NOT_ALLOWED } from './http';
export { sessionsBackend } from './sessions-backend';
export { runStdioServer } from './stdio';
export {
  createMcpServer,
  MCP_SERVER_NAME,
  MCP_SERVER_VERSION,
  TOOL_NAMES,
  type McpServerOptions,
  type ToolName,
} from './tools';
