/**
 * `DROPIN_TENANT_UPSTREAMS_FILE`: where each tenant's drop-in requests go and with which key,
 * read and checked once at start, so a typo stops the start instead of sending a tenant's
 * conversation to the default provider. A key is given inline (`apiKey`) or by the name of an
 * environment variable that holds it (`apiKeyEnv`), so secrets can stay in the secret store.
 *
 * ```json
 * {
 *   "acme": {
 *     "openai": { "baseURL": "https://api.openai.com/v1", "apiKeyEnv": "ACME_OPENAI_KEY" },
 *     "anthropic": { "baseURL": "https://api.anthropic.com", "apiKeyEnv": "ACME_ANTHROPIC_KEY" }
 *   },
 *   "lab": { "openai": { "baseURL": "http://vllm.lab:8000/v1" } }
 * }
 * ```
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { TenantUpstreams, UpstreamEndpoint } from '@compactor/gateway';

/** Environment variable names as shells and secret stores write them. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const EndpointEntry = z
  .strictObject({
    baseURL: z.url({ protocol: /^https?$/ }),
    apiKey: z.string().optional(),
    apiKeyEnv: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
  })
  .refine((entry) => entry.apiKey === undefined || entry.apiKeyEnv === undefined, {
    message: 'give apiKey or apiKeyEnv, not both',
  });

const TenantEntry = z.strictObject({ openai: EndpointEntry.optional(), anthropic: EndpointEntry.optional() });

/** Tenant ids as the keys table and API_KEYS hold them: no empty or padded id. */
export const TenantUpstreamsFile = z.record(
  z.string().regex(/^\S(.*\S)?$/, 'a tenant id, not empty nor padded with spaces'),
  TenantEntry,
);

export class TenantUpstreamsError extends Error {
  override readonly name = 'TenantUpstreamsError';
}

/**
 * The file's tenants and their endpoints. Throws a `TenantUpstreamsError` naming the file and
 * every bad field (`acme.openai.baseURL`), or the variable an `apiKeyEnv` names when it is unset.
 */
export function loadTenantUpstreams(
  path: string,
  environment: Record<string, string | undefined>,
): Map<string, TenantUpstreams> {
  const fail = (why: string) => new TenantUpstreamsError(`DROPIN_TENANT_UPSTREAMS_FILE ${path}: ${why}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw fail(`cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw fail(`is not JSON (${(error as Error).message})`);
  }
  const parsed = TenantUpstreamsFile.safeParse(json);
  if (!parsed.success) throw fail(`invalid\n${z.prettifyError(parsed.error)}`);

  const tenants = new Map<string, TenantUpstreams>();
  for (const [tenantId, entry] of Object.entries(parsed.data)) {
    const upstreams: TenantUpstreams = {};
    for (const protocol of ['openai', 'anthropic'] as const) {
      const endpoint = entry[protocol];
      if (endpoint === undefined) continue;
      upstreams[protocol] = resolveKey(endpoint, environment, (why) =>
        fail(`${tenantId}.${protocol}: ${why}`),
      );
    }
    tenants.set(tenantId, upstreams);
  }
  return tenants;
}

function resolveKey(
  entry: z.infer<typeof EndpointEntry>,
  environment: Record<string, string | undefined>,
  fail: (why: string) => Error,
): UpstreamEndpoint {
  if (entry.apiKeyEnv === undefined) return { baseURL: entry.baseURL, apiKey: entry.apiKey ?? '' };
  const apiKey = environment[entry.apiKeyEnv];
  // An unset secret is more often a deployment mistake than a keyless provider: say so at start.
  if (apiKey === undefined || apiKey === '')
    throw fail(`apiKeyEnv names ${entry.apiKeyEnv}, which is unset or empty`);
  return { baseURL: entry.baseURL, apiKey };
}
