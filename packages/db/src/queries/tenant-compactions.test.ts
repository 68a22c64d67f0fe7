import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileNamed } from '../prepared';
import { createTestSession } from '../test-support/fixtures';
import { insertCompaction, insertCompactionWithOutbox } from './compactions';
import { activeCompactionsOfTenantSql, countActiveCompactionsOfTenant } from './tenant-compactions';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();
let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client(t.url);
  await client.connect();
});
afterAll(async () => client.end());

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Heap Fetches'?: number;
  Plans?: PlanNode[];
}

/** Every scan of `compactions` in the plan: its node type, index and the rows it read. */
function compactionScans(node: PlanNode): Array<{ type: string; index?: string; read: number }> {
  const own =
    node['Relation Name'] === 'compactions'
      ? [
          {
            type: node['Node Type'],
            ...(node['Index Name'] ? { index: node['Index Name'] } : {}),
            read:
              ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) *
              (node['Actual Loops'] ?? 1),
          },
        ]
      : [];
  return [...own, ...(node.Plans ?? []).flatMap(compactionScans)];
}

describe('the count of a tenant’s active compactions', () => {
  it('copies the session’s tenant onto every compaction row, whichever insert wrote it', async () => {
    const session = await createTestSession(t.db, 'copied');
    const plain = await insertCompaction(t.db, {
      id: 'cmp_copied_1',
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
      status: 'completed',
    });
    const withOutbox = await insertCompactionWithOutbox(
      t.db,
      {
        id: 'cmp_copied_2',
        sessionPk: session.pk,
        reason: 'auto',
        strategy: 'summarize',
        keepRecentTokens: null,
        instructions: null,
        force: false,
        idempotencyKey: null,
      },
      'compact',
    );
    expect([plain?.tenantId, withOutbox?.compaction.tenantId]).toEqual(['copied', 'copied']);
  });

  it('counts only the tenant’s pending and running ones, and stops at the cap', async () => {
    const statuses = ['pending', 'running', 'running', 'completed', 'failed', 'skipped'] as const;
    for (const [i, status] of statuses.entries()) {
      const session = await createTestSession(t.db, 'counted');
      await insertCompaction(t.db, {
        id: `cmp_counted_${i}`,
        sessionPk: session.pk,
        reason: 'manual',
        strategy: 'summarize',
        status,
      });
    }
    const other = await createTestSession(t.db, 'someone-else');
    await insertCompaction(t.db, {
      id: 'cmp_other',
      sessionPk: other.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    expect(await countActiveCompactionsOfTenant(t.db, 'counted', 20)).toBe(3);
    expect(await countActiveCompactionsOfTenant(t.db, 'counted', 2)).toBe(2);
    expect(await countActiveCompactionsOfTenant(t.db, 'nobody', 20)).toBe(0);
  });

  it('reads at most the cap’s entries, planned generic on a new database, however large the tenant', async () => {
    // Planned (generic) while the tenant has nothing, as a fresh connection on a new database would.
    await client.query('set plan_cache_mode = force_generic_plan');
    const statement = compileNamed(activeCompactionsOfTenantSql('big', 20));
    await client.query(`prepare count_active as ${statement.text}`);
    await client.query(`execute count_active('big', 20)`);

    // A tenant with 3,000 sessions and 6,000 finished compactions, 30 of them still active
    // (more than the cap), beside 2,000 other tenants with one active compaction each.
    await client.query(
      `insert into sessions (tenant_id, id, model_id, provider, context_window, max_output_tokens, create_hash)
       select 'big', 'big_' || i, 'gpt-4o', 'openai', 128000, 16384, 'h' from generate_series(1, 3000) i`,
    );
    await client.query(
      `insert into sessions (tenant_id, id, model_id, provider, context_window, max_output_tokens, create_hash)
       select 'small_' || i, 's', 'gpt-4o', 'openai', 128000, 16384, 'h' from generate_series(1, 2000) i`,
    );
    await client.query(
      `insert into compactions (id, session_pk, tenant_id, reason, strategy, status, finished_at)
       select 'cmp_big_' || s.pk || '_' || n, s.pk, s.tenant_id, 'auto', 'summarize', 'completed', now()
       from sessions s, generate_series(1, 2) n where s.tenant_id = 'big'`,
    );
    await client.query(
      `insert into compactions (id, session_pk, tenant_id, reason, strategy, status)
       select 'cmp_big_active_' || s.pk, s.pk, s.tenant_id, 'manual', 'summarize', 'pending'
       from sessions s where s.tenant_id = 'big' order by s.pk limit 30`,
    );
    await client.query(
      `insert into compactions (id, session_pk, tenant_id, reason, strategy, status)
       select 'cmp_small_' || s.pk, s.pk, s.tenant_id, 'manual', 'summarize', 'running'
       from sessions s where s.tenant_id like 'small_%'`,
    );

    const { rows } = await client.query(
      `explain (analyze, buffers, format json) execute count_active('big', 20)`,
    );
    const plan = (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
    const scans = compactionScans(plan);
    expect(scans).toEqual([
      { type: expect.stringMatching(/^Index/), index: 'compactions_tenant_active_idx', read: 20 },
    ]);
    expect(await countActiveCompactionsOfTenant(t.db, 'big', 20)).toBe(20);
  });
});
