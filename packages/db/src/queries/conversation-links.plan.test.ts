/**
 * The chain lookup's plans stay bounded by the request, planned generic while the table was
 * empty (as a fresh connection on a new database plans them): every read of conversation_links
 * is one of its lookup indexes, and the entries read are about one per probe, however long the
 * stored session, however many sessions share a prefix, whatever other tenants hold.
 * docs/plans/conversation-links-100k.txt has the same at 100k links.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { SQL } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileNamed } from '../prepared';
import { useTestDatabase } from '../test-support/test-database';
import { NEWEST_PROBES, newestProbesSql, prefixSearchSql, withChainEnd } from './conversation-links';

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
  Plans?: PlanNode[];
}

/**
 * Every read of conversation_links in the plan: its node type, index, how many times it ran
 * (probes) and the most entries one probe returned or filtered out (Postgres reports per-probe
 * rows as a rounded average, so this bounds rather than counts).
 */
function linkScans(
  node: PlanNode,
): Array<{ type: string; index?: string; probes: number; perProbe: number }> {
  const own =
    node['Relation Name'] === 'conversation_links'
      ? [
          {
            type: node['Node Type'],
            ...(node['Index Name'] ? { index: node['Index Name'] } : {}),
            probes: node['Actual Loops'] ?? 1,
            perProbe: (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0),
          },
        ]
      : [];
  return [...own, ...(node.Plans ?? []).flatMap(linkScans)];
}

const hash = (label: string) => `sha256(convert_to(${label}, 'UTF8'))`;
const labelHash = (label: string) => createHash('sha256').update(label).digest();

/** A SQL literal of a statement parameter (EXECUTE takes expressions, not bound values). */
function literal(value: unknown): string {
  if (Array.isArray(value))
    return `array[${value.map((v: Buffer) => `'\\x${v.toString('hex')}'::bytea`).join(',')}]::bytea[]`;
  return `'${String(value).replaceAll("'", "''")}'`;
}

async function prepare(name: string, query: SQL): Promise<void> {
  await client.query(`prepare ${name} as ${compileNamed(query).text}`);
}

async function explained(name: string, query: SQL) {
  const { params } = compileNamed(query);
  const { rows } = await client.query(
    `explain (analyze, buffers, format json) execute ${name}(${params.map(literal).join(', ')})`,
  );
  const plan = (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
  const result = await client.query(`execute ${name}(${params.map(literal).join(', ')})`);
  return {
    scans: linkScans(plan),
    row: result.rows[0] as { session_pk: string; position: number; end_position?: number } | undefined,
  };
}

describe('the chain lookup at size', () => {
  it('reads about one index entry per probe, planned generic on an empty table', async () => {
    await client.query('set plan_cache_mode = force_generic_plan');
    const sample = [labelHash('x')];
    await prepare('newest', newestProbesSql('big', null, sample));
    await prepare('search', prefixSearchSql('big', null, sample));
    await prepare('newest_keyed', newestProbesSql('big', 'conv', sample));
    await prepare('newest_end', withChainEnd(newestProbesSql('big', null, sample)));

    // Tenant big: S with 20,000 links, 300 forks sharing its first 10; tenant copy: S verbatim;
    // 100 other tenants with 2,000 links each.
    await client.query(
      `insert into sessions (tenant_id, id, model_id, provider, context_window, max_output_tokens, create_hash)
       select 'big', 'S', 'm', 'openai', 8000, 1000, 'h' union all
       select 'big', 'fork-' || k, 'm', 'openai', 8000, 1000, 'h' from generate_series(1, 300) k union all
       select 'copy', 'S', 'm', 'openai', 8000, 1000, 'h' union all
       select 't' || k, 's', 'm', 'openai', 8000, 1000, 'h' from generate_series(1, 100) k`,
    );
    await client.query(
      `insert into conversation_links (session_pk, position, tenant_id, chain_hash, conversation_key, created_at)
       select s.pk, i, s.tenant_id, ${hash(`'S-' || i`)}, case when s.tenant_id = 'big' then 'conv' end, now()
       from sessions s, generate_series(0, 19999) i where s.id = 'S'
       union all
       select s.pk, i, 'big', case when i < 10 then ${hash(`'S-' || i`)} else ${hash(`s.id || '-' || i`)} end, null, now()
       from sessions s, generate_series(0, 99) i where s.id like 'fork-%'
       union all
       select s.pk, i, s.tenant_id, ${hash(`s.tenant_id || '-' || i`)}, null, now()
       from sessions s, generate_series(0, 1999) i where s.tenant_id like 't%'`,
    );
    await client.query('analyze conversation_links');

    const request = (kept: number, length: number) =>
      Array.from({ length }, (_, i) => labelHash(i < kept ? `S-${i}` : `new-${i}`));
    const newestOf = (hashes: Buffer[]) => hashes.slice(-NEWEST_PROBES).reverse();
    const restOf = (hashes: Buffer[]) => hashes.slice(0, hashes.length - NEWEST_PROBES);
    const tenantIndex = {
      type: expect.stringMatching(/^Index/),
      index: 'conversation_links_tenant_hash_idx',
    };

    // Extending S by 2: three probes, one entry found.
    const extending = request(19_998, 20_000);
    const usual = await explained('newest', newestProbesSql('big', null, newestOf(extending)));
    expect(usual.row).toMatchObject({ position: 19_997 });
    expect(usual.scans).toEqual([{ ...tenantIndex, probes: 3, perProbe: expect.any(Number) }]);
    expect(usual.scans[0]!.perProbe).toBeLessThanOrEqual(1);

    // With the matched session's chain end, as longestChainMatch sends it: one backward step of
    // the primary key more, however long the session.
    const ended = await explained(
      'newest_end',
      withChainEnd(newestProbesSql('big', null, newestOf(extending))),
    );
    expect(ended.row).toMatchObject({ position: 19_997, end_position: 19_999 });
    expect(ended.scans).toEqual([
      { ...tenantIndex, probes: 3, perProbe: expect.any(Number) },
      {
        type: expect.stringMatching(/^Index/),
        index: 'conversation_links_session_pk_position_pk',
        probes: 1,
        perProbe: 1,
      },
    ]);

    // An edit at message 10 of a 5,000-message history: 16 misses, then the search's steps.
    const edited = request(10, 5_000);
    const missed = await explained('newest', newestProbesSql('big', null, newestOf(edited)));
    expect(missed.row).toBeUndefined();
    expect(missed.scans).toEqual([{ ...tenantIndex, probes: NEWEST_PROBES, perProbe: 0 }]);
    const searched = await explained('search', prefixSearchSql('big', null, restOf(edited)));
    expect(searched.row).toMatchObject({ position: 9 });
    // About log2(4,984) steps of one probe each, then one probe for the newest session holding it.
    const [steps, last] = searched.scans;
    expect(searched.scans).toHaveLength(2);
    expect(steps).toMatchObject({ index: 'conversation_links_tenant_hash_idx', perProbe: 0 });
    expect(steps!.probes).toBeLessThanOrEqual(Math.ceil(Math.log2(4_984)) + 1);
    expect(last).toEqual({ ...tenantIndex, probes: 1, perProbe: 1 });

    // Under the header's key: the partial index of keyed links.
    const keyed = await explained('newest_keyed', newestProbesSql('big', 'conv', newestOf(extending)));
    expect(keyed.row).toMatchObject({ position: 19_997 });
    expect(keyed.scans).toEqual([
      {
        type: expect.stringMatching(/^Index/),
        index: 'conversation_links_key_hash_idx',
        probes: 3,
        perProbe: expect.any(Number),
      },
    ]);
    expect(keyed.scans[0]!.perProbe).toBeLessThanOrEqual(1);
  });
});
