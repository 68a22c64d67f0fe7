/**
 * `npm run db:migrate`: creates the database if missing, then applies the committed migrations.
 * Reads DATABASE_URL (default postgres://postgres@127.0.0.1:5432/compactor).
 */
import { ensureDatabase, migrateDatabase, redactUrl } from '../migrate';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor';
try {
  if (await ensureDatabase(url)) console.log(`created database ${redactUrl(url)}`);
  const { applied } = await migrateDatabase(url);
  console.log(
    applied ? `applied ${applied} migration(s) to ${redactUrl(url)}` : `${redactUrl(url)} is up to date`,
  );
} catch (error) {
  console.error(`migration failed for ${redactUrl(url)}: ${(error as Error).message}`);
  process.exitCode = 1;
}
