import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  RETENTION_NOW,
  SEEDED_SESSION_PURGE,
  seedCompactedSession,
} from '../test-support/retention-fixtures';
import { storeMediaObjects } from '../media/store';
import { parseRetentionArgs, runRetentionCommand } from './retention';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();
const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

function captured() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l), now: () => RETENTION_NOW },
  };
}

describe('parseRetentionArgs', () => {
  it('accepts a tenant and a number of days; dry run and 1,000-row batches by default', () => {
    expect(parseRetentionArgs(['--tenant', 'acme', '--older-than-days', '30'])).toEqual({
      tenantId: 'acme',
      olderThanDays: 30,
      apply: false,
      batchSize: 1000,
    });
    expect(
      parseRetentionArgs(['--tenant=acme', '--older-than-days=1', '--apply', '--batch-size', '50']),
    ).toEqual({
      tenantId: 'acme',
      olderThanDays: 1,
      apply: true,
      batchSize: 50,
    });
  });

  it.each([
    [[], '--tenant is required'],
    [['--tenant', ' ', '--older-than-days', '3'], '--tenant is required'],
    [['--tenant', 'acme'], '--older-than-days is required'],
    [['--tenant', 'acme', '--older-than-days', '0'], 'from 1 to 36500'],
    [['--tenant', 'acme', '--older-than-days=-5'], 'from 1 to 36500'],
    [['--tenant', 'acme', '--older-than-days', '1.5'], 'from 1 to 36500'],
    [['--tenant', 'acme', '--older-than-days', 'ten'], 'from 1 to 36500'],
    [['--tenant', 'acme', '--older-than-days', '99999999999'], 'from 1 to 36500'],
    [['--tenant', 'acme', '--older-than-days', '3', '--batch-size', '0'], '--batch-size'],
    [['--tenant', 'acme', '--older-than-days', '3', '--force'], "Unknown option '--force'"],
    [['--tenant', 'acme', '--older-than-days', '3', 'extra'], 'extra'],
  ])('rejects %j', (args, message) => {
    const parsed = parseRetentionArgs(args);
    expect(parsed).toHaveProperty('error');
    expect((parsed as { error: string }).error).toContain(message);
  });
});

describe('runRetentionCommand', () => {
  it('exits 2 with the reason and the usage on bad arguments, without connecting', async () => {
    const { err, io } = captured();
    const code = await runRetentionCommand(['--tenant', 'acme'], 'postgres://nobody@127.0.0.1:1/none', io);
    expect(code).toBe(2);
    expect(err.join('\n')).toMatch(/--older-than-days is required\nusage: npm run retention/);
  });

  it('prints per-session counts and bytes in a dry run, then purges with --apply, progress on stderr', async () => {
    const tenant = `tenant_${randomUUID()}`;
    const session = await seedCompactedSession(t.db, tenant);
    const { supersededMessages, supersededParts, prunedOutputs, bytes } = SEEDED_SESSION_PURGE;
    const row = [session.id, supersededMessages, supersededParts, prunedOutputs, bytes].join('\t');

    const dry = captured();
    expect(await runRetentionCommand(['--tenant', tenant, '--older-than-days', '30'], t.url, dry.io)).toBe(0);
    expect(dry.out).toContain(row);
    expect(dry.out.join('\n')).toContain('dry run: nothing was changed');
    expect(dry.err).toEqual([]);

    const applied = captured();
    const args = ['--tenant', tenant, '--older-than-days', '30', '--apply'];
    expect(await runRetentionCommand(args, t.url, applied.io)).toBe(0);
    expect(applied.out).toContain(row);
    expect(applied.out.at(-1)).toMatch(
      /^purged 2 superseded message\(s\) \(3 parts\) and 1 pruned output\(s\)/,
    );
    expect(applied.err).toEqual([
      `retention: ${session.id}: purged 2 superseded message(s) (${bytes - 300} bytes)`,
      `retention: ${session.id}: purged 1 pruned output(s) (300 bytes)`,
    ]);

    const again = captured();
    expect(await runRetentionCommand(args, t.url, again.io)).toBe(0);
    expect(again.out.at(-1)).toMatch(/^purged 0 superseded message\(s\) .* in 0 session\(s\)$/);
  });

  it('reports the media objects no message refers to in a dry run, and removes them with --apply', async () => {
    const tenant = `tenant_${randomUUID()}`;
    await storeMediaObjects(t.db, tenant, [
      {
        sha256: 'ab'.repeat(32),
        mime: 'image/png',
        data: new Uint8Array(40),
        width: 1,
        height: 1,
        pages: null,
      },
    ]);
    await t.database.pool.query(
      `update media_objects set stored_at = '2000-01-01T00:00:00Z' where tenant_id = $1`,
      [tenant],
    );
    const line = (verb: string) =>
      `media objects no message refers to (stored over an hour ago): ${verb} 1, 40 bytes`;
    const dry = captured();
    expect(await runRetentionCommand(['--tenant', tenant, '--older-than-days', '30'], t.url, dry.io)).toBe(0);
    expect(dry.out).toContain(line('would remove'));
    const applied = captured();
    const args = ['--tenant', tenant, '--older-than-days', '30', '--apply'];
    expect(await runRetentionCommand(args, t.url, applied.io)).toBe(0);
    expect(applied.out).toContain(line('removed'));
    expect(applied.err).toEqual(['retention: removed 1 unreferenced media object(s) (40 bytes)']);
    const { rows } = await t.database.pool.query('select 1 from media_objects where tenant_id = $1', [
      tenant,
    ]);
    expect(rows).toEqual([]);
  });

  it('refuses a second --apply for a tenant while one runs, and writes nothing', async () => {
    const tenant = `tenant_${randomUUID()}`;
    const session = await seedCompactedSession(t.db, tenant);
    const running = await t.database.pool.connect();
    try {
      await running.query('select pg_advisory_lock(hashtextextended($1, 0))', [
        `compactor:retention:${tenant}`,
      ]);
      const second = captured();
      const args = ['--tenant', tenant, '--older-than-days', '30', '--apply'];
      expect(await runRetentionCommand(args, t.url, second.io)).toBe(1);
      expect(second.err).toEqual([
        `retention: another --apply run for tenant ${tenant} is in progress; try again when it ends`,
      ]);
    } finally {
      running.release();
    }
    const untouched = await t.database.pool.query(
      'select count(*)::int as n from messages where purged_at is not null and session_pk = $1',
      [session.pk],
    );
    expect(untouched.rows[0].n).toBe(0);
  });

  it('runs as `npm run retention` does, exiting non-zero with a clear message on bad arguments', async () => {
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const script = join(REPO_ROOT, 'packages', 'db', 'src', 'cli', 'retention.ts');
    const run = promisify(execFile)(tsx, [script, '--tenant', 'acme', '--older-than-days', '0'], {
      env: { ...process.env, DATABASE_URL: t.url },
    });
    await expect(run).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--older-than-days must be a whole number of days from 1 to 36500'),
    });
  });
});
