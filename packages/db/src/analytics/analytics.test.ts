import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_FOLDER } from '../migrate';
import { SECRET, seedAnalytics, seedDays } from '../test-support/analytics-fixtures';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();
const ROLE = 'compactor_analyst';
const DOC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'docs', 'ANALYTICS.md');

/** The `sql` blocks of the doc's "Example queries" section, with their headings. */
function exampleQueries(): Array<{ title: string; sql: string }> {
  const doc = readFileSync(DOC, 'utf8');
  const section = doc.split('\n## Example queries\n')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^### (.+)\n+```sql\n([\s\S]*?)```/gm)].map((m) => ({
    title: m[1]!,
    sql: m[2]!,
  }));
}

/**
 * Runs `statement` as the analyst role, on a connection of its own. Every value comes back as
 * Postgres' text (no driver parsing: dates and numerics compare exactly) in UTC.
 */
async function asAnalyst(statement: string): Promise<Array<Record<string, string | null>>> {
  const client = new pg.Client({
    connectionString: t.url,
    types: { getTypeParser: () => (value: string) => value },
  });
  await client.connect();
  try {
    await client.query(`set timezone = 'UTC'; set role ${ROLE}`);
    return (await client.query<Record<string, string | null>>(statement)).rows;
  } finally {
    await client.end();
  }
}

const day = (d: Date) => d.toISOString().slice(0, 10);
/** A timestamptz as Postgres prints it in UTC (whole seconds). */
const stamp = (d: Date, plusMs: number) =>
  `${new Date(d.getTime() + plusMs).toISOString().slice(0, 19).replace('T', ' ')}+00`;
const H = 3_600_000;
const row = (columns: string[], values: Array<string | number | null>) =>
  Object.fromEntries(columns.map((c, i) => [c, values[i] === null ? null : String(values[i])]));

const { d0, d1, d2 } = seedDays();

/** The result each example query must return on the seed (see analytics-fixtures.ts for the rows). */
const EXPECTED: Record<number, Array<Record<string, string | null>>> = {
  // Per tenant and day: acme d1 = c1 + failed c4, d2 = c2 + c3 + failed c5; globex d2 = pending c8.
  1: [
    ['acme', day(d0), 1, 0, 50_000],
    ['acme', day(d1), 1, 1, 70_000],
    ['acme', day(d2), 2, 1, 110_000],
    ['globex', day(d1), 1, 0, 150_000],
    ['globex', day(d2), 0, 0, 0],
  ].map((v) => row(['tenant_id', 'day', 'completed', 'failed', 'tokens_saved'], v)),
  // finalize [100,200,300,300,500]; prune [100,100,100,200,200,300,500,500];
  // summarize [100,500,1500,3000,6000,7800]; interpolated percentiles.
  2: [
    ['finalize', 5, '300.0', '460.0'],
    ['prune', 8, '200.0', '500.0'],
    ['summarize', 6, '2250.0', '7350.0'],
  ].map((v) => row(['step', 'runs', 'p50_ms', 'p95_ms'], v)),
  3: [
    ['attempts_exhausted', 1, 1, stamp(d2, 8 * H + 300_000)],
    ['llm_fatal', 1, 1, stamp(d1, 11 * H + 3_000)],
  ].map((v) => row(['error_code', 'failures', 'sessions', 'last_seen'], v)),
  // a1: c0..c3 (50k + 70k + 80k + 30k saved, 3 messages); g1: c6, c7, c8; a2: two failures.
  4: [
    ['acme', 'a1', 4, 4, 230_000, 3],
    ['globex', 'g1', 3, 1, 150_000, 0],
    ['acme', 'a2', 2, 0, 0, 0],
  ].map((v) => row(['tenant_id', 'session_id', 'compactions', 'completed', 'tokens_saved', 'messages'], v)),
  // globex: $0.20 for 150k saved; acme: $0.012 for 230k saved.
  5: [
    ['globex', 1, 50_000, 3_000, '0.200000', '1.33'],
    ['acme', 3, 60_000, 4_500, '0.012000', '0.05'],
  ].map((v) =>
    row(
      [
        'tenant_id',
        'paid_compactions',
        'input_tokens',
        'output_tokens',
        'cost_usd',
        'usd_per_million_tokens_saved',
      ],
      v,
    ),
  ),
  6: [
    ['auto', 'summarize', 6, 3, 90_000],
    ['manual', 'summarize', 1, 0, null],
    ['manual', 'truncate', 1, 1, 30_000],
    ['overflow', 'summarize', 1, 1, 80_000],
  ].map((v) => row(['reason', 'strategy', 'compactions', 'completed', 'avg_tokens_saved'], v)),
  7: [
    ['acme', 5, 10_000, 230_000, '4.3'],
    ['globex', 10, 20_000, 150_000, '13.3'],
  ].map((v) => row(['tenant_id', 'pruned_parts', 'pruned_tokens', 'tokens_saved', 'pruned_share_pct'], v)),
  // c2 retried once after a failed summarize; c4's summarize failed; c5 ran out of attempts.
  8: [
    [1, 5, 4, 1],
    [2, 1, 1, 1],
    [3, 1, 0, 0],
  ].map((v) => row(['attempts', 'compactions', 'completed', 'failed_steps'], v)),
  9: [
    ['gpt-4o', 1, 3, 7800, 7800, 50_000, 3_000],
    ['gpt-4o-mini', 3, 4, 3500, 6000, 20_000, 1_500],
  ].map((v) =>
    row(['llm_model', 'summaries', 'calls', 'avg_ms', 'max_ms', 'avg_input_tokens', 'avg_output_tokens'], v),
  ),
  // c0 is 30 days old; c7 was skipped.
  10: [
    ['acme', 'a1', 'overflow', 'summarize', 2, 16_400, 1_000, 100, 6_000, 300],
    ['globex', 'g1', 'auto', 'summarize', 1, 8_100, 100, 100, 7_800, 100],
    ['acme', 'a1', 'auto', 'summarize', 1, 4_500, 500, 500, 3_000, 500],
    ['acme', 'a1', 'manual', 'truncate', 1, 1_200, 200, 200, 500, 300],
  ].map((v) =>
    row(
      [
        'tenant_id',
        'session_id',
        'reason',
        'strategy',
        'attempts',
        'duration_ms',
        'queued_ms',
        'prune_ms',
        'summarize_ms',
        'finalize_ms',
      ],
      v,
    ),
  ),
};

beforeAll(async () => {
  await seedAnalytics(t.db);
});

describe('docs/ANALYTICS.md example queries', () => {
  const queries = exampleQueries();

  it('has ten', () => {
    expect(queries.map((q) => q.title.split('.')[0])).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
      '9',
      '10',
    ]);
  });

  it.each(queries.map((q, i) => [q.title, i + 1] as const))(
    '%s: runs as the analyst role',
    async (_title, n) => {
      expect(await asAnalyst(queries[n - 1]!.sql)).toEqual(EXPECTED[n]);
    },
  );
});

describe('the analytics views', () => {
  it.each(['compactions', 'compaction_steps', 'daily', 'sessions'])(
    'analytics.%s never shows message text',
    async (view) => {
      const rows = await asAnalyst(`select * from analytics.${view}`);
      expect(rows.length).toBeGreaterThan(0);
      expect(JSON.stringify(rows)).not.toContain(SECRET);
    },
  );

  it('is one row per compaction with its steps timed', async () => {
    const [c2] = await asAnalyst(`select * from analytics.compactions where compaction_id = 'c2'`);
    expect(c2).toMatchObject({
      tenant_id: 'acme',
      session_id: 'a1',
      status: 'completed',
      duration_ms: '16400',
      run_ms: '15400',
      prune_ms: '100',
      summarize_ms: '6000',
      finalize_ms: '300',
      step_records: '5',
      failed_steps: '1',
      tokens_saved: '80000',
      llm_model: 'gpt-4o-mini',
      llm_calls: '2',
      written_by: 'llm',
    });
    const steps = await asAnalyst(`select step, attempt, status, duration_ms, llm_input_tokens, error_message
      from analytics.compaction_steps where compaction_id = 'c2' order by step_record_id`);
    expect(steps.map((s) => Object.values(s))).toEqual([
      ['prune', '1', 'completed', '200', null, null],
      ['summarize', '1', 'failed', '2000', null, 'LLM 429: rate limited'],
      ['prune', '2', 'completed', '100', null, null],
      ['summarize', '2', 'completed', '6000', '30000', null],
      ['finalize', '2', 'completed', '300', null, null],
    ]);
  });
});

describe('the compactor_analyst role', () => {
  it.each([
    'messages',
    'parts',
    'part_prunes',
    'compactions',
    'compaction_steps',
    'sessions',
    'api_keys',
    'outbox',
    'prune_runs',
  ])('cannot select from %s', async (table) => {
    await expect(asAnalyst(`select * from ${table} limit 1`)).rejects.toMatchObject({ code: '42501' });
  });

  it('cannot log in, and holds SELECT on the views only', async () => {
    const [role] = await asAnalyst(`select rolcanlogin, rolsuper from pg_roles where rolname = '${ROLE}'`);
    expect(role).toEqual({ rolcanlogin: 'f', rolsuper: 'f' });
    const grants = await asAnalyst(`select table_schema, table_name, privilege_type
      from information_schema.role_table_grants where grantee = '${ROLE}' order by table_name`);
    expect(grants).toEqual(
      [
        'compaction_steps',
        'compactions',
        'daily',
        'prepared_summaries',
        'prune_runs',
        'session_tasks',
        'sessions',
      ].map((name) => ({
        table_schema: 'analytics',
        table_name: name,
        privilege_type: 'SELECT',
      })),
    );
  });

  it('cannot execute the append functions, which only the service role may', async () => {
    const functions = await t.database.pool.query<{
      signature: string;
      config: string[] | null;
      acl: string | null;
    }>(
      `select p.oid::regprocedure::text as signature, p.proconfig as config, p.proacl::text as acl
       from pg_proc p where p.proname like 'compactor\\_%' and p.pronamespace = 'public'::regnamespace
       order by 1`,
    );
    expect(functions.rows.map((f) => f.signature.split('(')[0])).toEqual([
      'compactor_append',
      'compactor_append_to_session',
    ]);
    for (const { signature, config, acl } of functions.rows) {
      // Pinned to its own schema: a table of the same name earlier on a caller's path is not read.
      expect(config, signature).toEqual(['search_path=public, pg_temp']);
      // No `=X/` entry: PUBLIC may not execute it.
      expect(acl, signature).not.toMatch(/(^|[{,])=X/);
      const [canExecute] = await asAnalyst(
        `select has_function_privilege('${ROLE}', '${signature}', 'EXECUTE') as allowed`,
      );
      expect(canExecute, signature).toEqual({ allowed: 'f' });
    }
    await expect(
      asAnalyst(
        `select * from compactor_append_to_session('t', 's', 'm', '{}'::text[], '{}'::text[], '[]'::jsonb, '[]'::jsonb)`,
      ),
    ).rejects.toMatchObject({ code: '42501' });
  });

  it('is created idempotently: the migration statement runs again on an existing role', async () => {
    const migration = readFileSync(join(MIGRATIONS_FOLDER, '0004_analytics.sql'), 'utf8');
    const statement = migration.slice(migration.indexOf('DO $$'));
    expect(statement).toContain(`CREATE ROLE ${ROLE} NOLOGIN`);
    await t.database.pool.query(statement);
    await t.database.pool.query(statement);
    expect(await asAnalyst('select count(*) as n from analytics.sessions')).toEqual([{ n: '3' }]);
  });
});
