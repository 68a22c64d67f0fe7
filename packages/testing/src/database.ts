import pg from 'pg';

/** Every database a test file clones starts with this, then the run id, so leftovers can be found. */
export const TEST_DATABASE_PREFIX = 'compactor_test_';

/** The URL of database `name` on the same server as `baseUrl`. */
export function databaseUrlFor(baseUrl: string, name: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `fn` with a client on the server's admin URL (creating and dropping databases). */
export async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: 'compactor-test-setup' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
