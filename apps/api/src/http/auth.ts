import { createHash } from 'node:crypto';
import { findActiveApiKeyByHash, hasActiveApiKeys, type Db } from '@compactor/db';
import { ApiError } from './errors';

/** The tenant every request belongs to when no key is configured anywhere (local use). */
export const OPEN_TENANT = 'default';

/** How long "are there keys in the table?" is trusted; keys added by the CLI apply within it. */
const KEY_TABLE_CHECK_MS = 2000;

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

export interface Authenticator {
  /** The tenant for an `Authorization` header; throws a 401 ApiError when it grants none. */
  tenantFor(authorization: string | undefined): Promise<string>;
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
    async tenantFor(authorization) {
      if (await isOpen()) return OPEN_TENANT;
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      if (!match?.[1])
        throw new ApiError(401, 'unauthorized', 'missing bearer key: send Authorization: Bearer <key>');
      const hash = hashApiKey(match[1]);
      const tenant = envTenantByHash.get(hash) ?? (await findActiveApiKeyByHash(db, hash))?.tenantId;
      if (!tenant) throw new ApiError(401, 'unauthorized', 'unknown or revoked API key');
      return tenant;
    },
  };
}
