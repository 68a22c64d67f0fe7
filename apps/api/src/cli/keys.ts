/**
 * `npm run keys -w @compactor/api -- <command>`: manage API keys in the keys table.
 *   create <tenant> [name]   prints a new key once; only its SHA-256 is stored
 *   list                     id, tenant, name, created, revoked
 *   revoke <id>              the key stops working within 2 seconds
 * Reads DATABASE_URL like the API does.
 */
import { randomBytes } from 'node:crypto';
import { createDatabase, insertApiKey, listApiKeys, revokeApiKey } from '@compactor/db';
import { parseEnv } from '../env';
import { hashApiKey } from '../http/auth';
import { newId } from '@compactor/db';

export async function runKeysCommand(
  args: string[],
  databaseUrl: string,
  out = console.log,
): Promise<number> {
  const [command, ...rest] = args;
  const database = createDatabase(databaseUrl, { max: 1, applicationName: 'compactor-keys' });
  try {
    switch (command) {
      case 'create': {
        const [tenant, name = 'default'] = rest;
        if (!tenant) return usage(out);
        const key = `cpk_${randomBytes(32).toString('base64url')}`;
        const row = await insertApiKey(database.db, {
          id: newId('key'),
          tenantId: tenant,
          name,
          keyHash: hashApiKey(key),
        });
        out(`created ${row.id} for tenant ${tenant}\n${key}\n(store it now: it is not shown again)`);
        return 0;
      }
      case 'list': {
        for (const row of await listApiKeys(database.db)) {
          out(
            [
              row.id,
              row.tenantId,
              row.name,
              row.createdAt.toISOString(),
              row.revokedAt?.toISOString() ?? 'active',
            ].join('\t'),
          );
        }
        return 0;
      }
      case 'revoke': {
        const [id] = rest;
        if (!id) return usage(out);
        const revoked = await revokeApiKey(database.db, id, new Date());
        out(revoked ? `revoked ${id}` : `no active key ${id}`);
        return revoked ? 0 : 1;
      }
      default:
        return usage(out);
    }
  } finally {
    await database.close();
  }
}

function usage(out: (line: string) => void): number {
  out('usage: keys create <tenant> [name] | keys list | keys revoke <id>');
  return 2;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = parseEnv();
  runKeysCommand(process.argv.slice(2), env.DATABASE_URL).then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(error.message);
      process.exit(1);
    },
  );
}
