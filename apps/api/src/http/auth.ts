import { createHash } from 'node:crypto';
import { findActiveApiKeyByHash, hasActiveApiKeys, type Db } from '@compactor/db';
import { ApiError } from './errors';

/** The tenant every request belongs to when no key is configured anywhere (local use). */
export const OPEN_TENANT = 'default';

/** How long "are there keys in the table?" is trusted; keys added by the CLI apply within it. */
const KEY_TABLE_CHECK_MS = 2000;

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

export interface Authenticator {
  /**
   * The tenant for an `Authorization: Bearer` header, or when there is none for an `x-api-key`
   * header (the key as Anthropic's SDK sends it); throws a 401 ApiError when they grant none.
   */
  tenantFor(authorization: string | undefined, apiKey?: string | string[] | undefined): Promise<string>;
  /** Whether the API currently runs without keys. */
  isOpen(): Promise<boolean>;
}

/**
 * Bearer keys from `API_KEYS` (held as hashes) and from the keys table (stored as hashes). With
 * neither, the API is open and every request is the `default` tenant.
 */
export function createAuthenticator(
  db: Db,
  envKeys: Map<string, string>,
  now = () => Date.now(),
): Authenticator {
  const envTenantByHash = new Map([...envKeys].map(([key, tenant]) => [hashApiKey(key), tenant]));
  let tableHasKeys: { value: boolean; checkedAt: number } | null = null;

  async function isOpen(): Promise<boolean> {
    if (envTenantByHash.size > 0) return false;
    if (!tableHasKeys || now() - tableHasKeys.checkedAt > KEY_TABLE_CHECK_MS) {
      tableHasKeys = { value: await hasActiveApiKeys(db), checkedAt: now() };
    }
    return !tableHasKeys.value;
  }

  return {
    isOpen,
    async tenantFor(authorization, apiKey) {
      if (await isOpen()) return OPEN_TENANT;
      // An empty Authorization header is no header (a client told to clear it sends one).
      const key = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : apiKeyOf(apiKey);
      if (!key)
        throw new ApiError(
          401,
          'unauthorized',
          'missing key: send Authorization: Bearer <key> (or x-api-key: <key>)',
        );
      const hash = hashApiKey(key);
      const tenant = envTenantByHash.get(hash) ?? (await findActiveApiKeyByHash(db, hash))?.tenantId;
      if (!tenant) throw new ApiError(401, 'unauthorized', 'unknown or revoked API key');
      return tenant;
    },
  };
}

/** The key of an `x-api-key` header: one value, trimmed, without whitespace inside. */
function apiKeyOf(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const key = header.trim();
  return /^\S+$/.test(key) ? key : undefined;
}
