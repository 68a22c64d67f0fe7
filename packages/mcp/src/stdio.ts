import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CompactorClient } from '@compactor/client';
import { clientBackend } from './client-backend';
import { parseMcpEnv } from './env';
import { createMcpServer } from './tools';

/**
 * The stdio MCP server (`compactor-mcp`): reads the environment, then serves the tools over
 * stdin/stdout until stdin closes, calling the API with the key it was given. Stdout carries
 * the protocol alone, so everything else goes to stderr. Returns the exit code when it cannot
 * start (2: the environment is wrong); otherwise resolves once serving.
 */
export async function runStdioServer(env: Record<string, string | undefined>): Promise<number | null> {
  const parsed = parseMcpEnv(env);
  if ('error' in parsed) {
    process.stderr.write(`${parsed.error}\n`);
    return 2;
  }
  const { COMPACTOR_URL: baseUrl, COMPACTOR_API_KEY: apiKey } = parsed.env;
  const backend = clientBackend(new CompactorClient({ baseUrl, apiKey }), baseUrl);
  const server = createMcpServer(backend, {
    // The error's name only: nothing of a tool's arguments reaches stderr.
    onUnexpectedError: (error, tool) =>
      process.stderr.write(
        `compactor-mcp: ${tool} failed (${error instanceof Error ? error.name : 'unknown error'})\n`,
      ),
  });
  await server.connect(new StdioServerTransport());
  return null;
}
