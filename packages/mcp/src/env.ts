import { z } from 'zod';

/** The stdio server's environment (`compactor-mcp`, `npm run -s mcp`). */
export const McpEnv = z.object({
  /** The Compactor API the tools call: `http://127.0.0.1:3000` (and a path prefix, if it has one). */
  COMPACTOR_URL: z.url({
    protocol: /^https?$/,
    error: 'COMPACTOR_URL must be the http(s) URL of the Compactor API',
  }),
  /** The tenant's key, sent as `Authorization: Bearer`; empty or unset for an API that runs open. */
  COMPACTOR_API_KEY: z
    .string()
    .optional()
    .transform((key) => (key === undefined || key.trim() === '' ? null : key.trim())),
});
export type McpEnv = z.output<typeof McpEnv>;

/** The environment parsed, or the words that say what is wrong with it (for stderr). */
export function parseMcpEnv(env: Record<string, string | undefined>): { env: McpEnv } | { error: string } {
  const parsed = McpEnv.safeParse(env);
  if (parsed.success) return { env: parsed.data };
  const lines = parsed.error.issues.map((issue) =>
    issue.path[0] === 'COMPACTOR_URL' && env.COMPACTOR_URL === undefined
      ? 'COMPACTOR_URL is not set: the URL of the Compactor API, e.g. COMPACTOR_URL=http://127.0.0.1:3000'
      : `${issue.path.join('.')}: ${issue.message}`,
  );
  return { error: `compactor-mcp: ${lines.join('; ')}` };
}
