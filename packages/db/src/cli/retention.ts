/**
 * `npm run retention -- --tenant T --older-than-days N [--apply] [--batch-size B]`: purges one
 * tenant's pruned tool outputs and superseded messages (behind the latest completed compaction's
 * boundary) older than N days, then removes the tenant's media objects no part refers to any
 * more (db media/orphans.ts). Dry run unless `--apply`. Reads DATABASE_URL like `db:migrate`.
 * See docs/ANALYTICS.md, "Retention".
 */
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { createDatabase, type Db } from '../client';
import { migrationState, redactUrl } from '../migrate';
import { countOrphanMedia, deleteOrphanMedia, ORPHAN_GRACE_MS, type OrphanReport } from '../media/orphans';
import {
  applyRetentionPurge,
  DEFAULT_PURGE_BATCH_SIZE,
  planRetentionPurge,
  type SessionPurgeReport,
} from '../operations/purge-retention';

const DAY_MS = 86_400_000;
/** A century: beyond it the cutoff leaves the range of a Date (and of `timestamptz`). */
const MAX_DAYS = 36_500;

export const RETENTION_USAGE =
  'usage: npm run retention -- --tenant <tenant> --older-than-days <N ≥ 1> [--apply] [--batch-size <rows>]';

/** Parsed, validated arguments of the retention command. */
export interface RetentionArgs {
  tenantId: string;
  olderThanDays: number;
  apply: boolean;
  batchSize: number;
}

/** Validates the command line; returns the arguments or the message to print (exit code 2). */
export function parseRetentionArgs(args: string[]): RetentionArgs | { error: string } {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        tenant: { type: 'string' },
        'older-than-days': { type: 'string' },
        apply: { type: 'boolean', default: false },
        'batch-size': { type: 'string' },
      },
    }));
  } catch (error) {
    return { error: (error as Error).message };
  }
  const tenantId = values.tenant?.trim();
  if (!tenantId) return { error: '--tenant is required: the purge runs for one tenant at a time' };
  const days = values['older-than-days'];
  if (days === undefined) return { error: '--older-than-days is required' };
  if (!/^\d+$/.test(days) || Number(days) < 1 || Number(days) > MAX_DAYS)
    return {
      error: `--older-than-days must be a whole number of days from 1 to ${MAX_DAYS} (got "${days}")`,
    };
  const batch = values['batch-size'] ?? String(DEFAULT_PURGE_BATCH_SIZE);
  if (!/^\d+$/.test(batch) || Number(batch) < 1 || Number(batch) > 100_000)
    return { error: `--batch-size must be a whole number from 1 to 100000 (got "${batch}")` };
  return { tenantId, olderThanDays: Number(days), apply: values.apply, batchSize: Number(batch) };
}

/** Where the command writes: the report on `out` (stdout), usage errors and progress on `err`. */
export interface RetentionIo {
  out: (line: string) => void;
  err: (line: string) => void;
  now?: () => Date;
}

/** Runs the command; returns the process exit code (2: bad arguments, 1: failure). */
export async function runRetentionCommand(
  args: string[],
  databaseUrl: string,
  io: RetentionIo,
): Promise<number> {
  const parsed = parseRetentionArgs(args);
  if ('error' in parsed) {
    io.err(`retention: ${parsed.error}\n${RETENTION_USAGE}`);
    return 2;
  }
  const state = await migrationState(databaseUrl);
  if (state.pending > 0) {
    io.err(
      `retention: ${redactUrl(databaseUrl)} lacks ${state.pending} migration(s): run npm run db:migrate first`,
    );
    return 1;
  }
  const now = io.now?.() ?? new Date();
  const scope = {
    tenantId: parsed.tenantId,
    createdBefore: new Date(now.getTime() - parsed.olderThanDays * DAY_MS),
  };
  // One connection: the tenant's advisory lock below belongs to it and lives as long as the run.
  const database = createDatabase(databaseUrl, {
    max: 1,
    statementTimeoutMs: 0,
    applicationName: 'compactor-retention',
  });
  try {
    if (parsed.apply && !(await lockTenantPurge(database.db, parsed.tenantId))) {
      io.err(
        `retention: another --apply run for tenant ${parsed.tenantId} is in progress; try again when it ends`,
      );
      return 1;
    }
    const reports = parsed.apply
      ? await applyRetentionPurge(database.db, scope, {
          batchSize: parsed.batchSize,
          at: now,
          onBatch: (b) =>
            io.err(
              `retention: ${b.sessionId}: purged ${b.rows} ${b.kind === 'superseded' ? 'superseded message(s)' : 'pruned output(s)'} (${b.bytes} bytes)`,
            ),
        })
      : await planRetentionPurge(database.db, scope);
    // After the purge: the parts it cleared no longer refer to their images.
    const mediaScope = {
      tenantId: parsed.tenantId,
      storedBefore: new Date(now.getTime() - ORPHAN_GRACE_MS),
    };
    const media = parsed.apply
      ? await deleteOrphanMedia(database.db, mediaScope, {
          onBatch: (b) =>
            io.err(`retention: removed ${b.objects} unreferenced media object(s) (${b.bytes} bytes)`),
        })
      : await countOrphanMedia(database.db, mediaScope);
    printReport(reports, media, parsed, scope.createdBefore, io.out);
    return 0;
  } finally {
    await database.close();
  }
}

/**
 * Two `--apply` runs for one tenant would pick the same batches and report each row twice; the
 * second one is refused instead (a session-level lock, released when the connection closes).
 */
async function lockTenantPurge(db: Db, tenantId: string): Promise<boolean> {
  const { rows } = await db.execute<{ locked: boolean }>(
    sql`select pg_try_advisory_lock(hashtextextended(${`compactor:retention:${tenantId}`}, 0)) as locked`,
  );
  return rows[0]?.locked === true;
}

function printReport(
  reports: SessionPurgeReport[],
  media: OrphanReport,
  args: RetentionArgs,
  createdBefore: Date,
  out: (line: string) => void,
): void {
  const verb = args.apply ? 'purged' : 'would purge';
  out(
    `tenant ${args.tenantId}: content created before ${createdBefore.toISOString()} (${args.olderThanDays} days)`,
  );
  out(['session', 'superseded_messages', 'their_parts', 'pruned_outputs', 'bytes'].join('\t'));
  for (const r of reports) {
    out([r.sessionId, r.supersededMessages, r.supersededParts, r.prunedOutputs, r.bytes].join('\t'));
  }
  out(
    `media objects no message refers to (stored over an hour ago): ${args.apply ? 'removed' : 'would remove'} ` +
      `${media.objects}, ${media.bytes} bytes`,
  );
  const sum = (key: keyof Omit<SessionPurgeReport, 'sessionId'>) => reports.reduce((n, r) => n + r[key], 0);
  out(
    `${verb} ${sum('supersededMessages')} superseded message(s) (${sum('supersededParts')} parts) and ` +
      `${sum('prunedOutputs')} pruned output(s), ${sum('bytes')} bytes, in ${reports.length} session(s)` +
      (args.apply ? '' : '\ndry run: nothing was changed; add --apply to purge'),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor';
  runRetentionCommand(process.argv.slice(2), url, {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }).then(
    (code) => process.exit(code),
    (error: Error) => {
      process.stderr.write(`retention failed: ${error.message}\n`);
      process.exit(1);
    },
  );
}
