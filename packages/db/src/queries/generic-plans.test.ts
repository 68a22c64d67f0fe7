import pg from 'pg';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { compileNamed } from '../prepared';
import { createTestSession, newMessage, text } from '../test-support/fixtures';
import { completeCompaction, measuredSizeSql } from '../operations/complete-compaction';
import { insertCompaction } from './compactions';
import { contextRowsSql } from './context-rows';
import { sessionStatusInputsSql } from './session-status';
import { useTestDatabase } from '../test-support/test-database';

/**
 * A connection keeps the generic plan it first made for a prepared statement (and for each
 * statement of a SQL function), and on a new database that plan is made while the statistics
 * say a session has one message. The hot statements must stay bounded by the kept window even
 * then: here each is planned generic on a tiny session, the session grows to 3,000 messages
 * with a boundary near its end, and the same plan runs again. Before the fix, the view's range
 * and the append's id lookup scanned the whole session through another index and filtered it.
 */
const t = useTestDatabase();
let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client(t.url);
  await client.connect();
  await client.query(`set plan_cache_mode = force_generic_plan`);
});
afterAll(async () => client.end());

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Shared Hit Blocks'?: number;
  Plans?: PlanNode[];
}

/** The most rows any scan of `relation` read (returned or filtered out), over all its loops. */
function mostRowsRead(node: PlanNode, relation = 'messages'): number {
  const loops = node['Actual Loops'] ?? 1;
  const read =
    node['Relation Name'] === relation
      ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * loops
      : 0;
  const joinFiltered = node['Rows Removed by Join Filter'] ?? 0;
  return Math.max(read, joinFiltered, ...(node.Plans ?? []).map((child) => mostRowsRead(child, relation)));
}

/** A parameter as a literal: EXPLAIN EXECUTE takes no bind parameters. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return pg.escapeLiteral(`{${value.map((v) => `"${String(v)}"`).join(',')}}`);
  return pg.escapeLiteral(String(value));
}

async function explainPrepared(name: string, params: unknown[]): Promise<PlanNode> {
  const args = params.length ? `(${params.map(literal).join(', ')})` : '';
  const { rows } = await client.query(`explain (analyze, buffers, format json) execute ${name}${args}`);
  return (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
}

const turn = (i: number) => [
  newMessage('user', [text(`request ${i}: change the exporter`, 8)], { id: `u${i}` }),
  newMessage('assistant', [text(`done with request ${i}`, 6)], { id: `a${i}` }),
];

describe('generic plans made on a new database stay bounded as a session grows', () => {
  it('the status, the context read and the append', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, turn(0));
    const statements = {
      status: compileNamed(sessionStatusInputsSql(session.pk, { pinSystemMessages: true })),
      context: compileNamed(contextRowsSql(session.pk, { pinSystemMessages: true })),
    };
    // Planned (generic) and run while the session has two messages.
    for (const [name, statement] of Object.entries(statements)) {
      await client.query(`prepare plan_${name} as ${statement.text}`);
      await explainPrepared(`plan_${name}`, statement.params);
    }
    await client.query(
      `prepare plan_append(bigint, text[]) as select * from compactor_append($1, $2, '{}'::text[], null, null, true)`,
    );
    await explainPrepared('plan_append', [session.pk, ['u0']]);

    for (let i = 1; i < 1_500; i += 50) {
      await appendTestMessages(t.db, session.pk, Array.from({ length: 50 }, (_, k) => turn(i + k)).flat());
    }
    const compaction = await insertCompaction(t.db, {
      id: 'cmp_plans',
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
      status: 'running',
      // As a claim records it: the session's last seq when the compaction started.
      coversThroughSeq: 3_002,
    });
    await completeCompaction(t.db, {
      compactionId: compaction!.id,
      sessionPk: session.pk,
      boundarySeq: 2_991,
      summaryMessages: [newMessage('assistant', [text('the summary', 3)], { id: 'sum_plans' })],
      tokensBefore: 20_000,
      messagesBefore: 2_990,
      finishedAt: new Date(),
    });
    const { rows } = await t.db.execute(
      sql`select count(*)::int as n from messages where session_pk = ${session.pk}`,
    );
    expect(rows[0]).toEqual({ n: 3_003 });

    // The view keeps 12 messages and the summary: no scan may read the session's 3,000.
    for (const [name, statement] of Object.entries(statements)) {
      const plan = await explainPrepared(`plan_${name}`, statement.params);
      expect(mostRowsRead(plan), name).toBeLessThan(100);
    }
    // The append's id lookup: its function's statements are planned generic too.
    const append = await explainPrepared('plan_append', [session.pk, ['u7', 'a1200', 'new-id']]);
    expect(append['Shared Hit Blocks'] ?? 0).toBeLessThan(40);
  });

  it("the completion's size statement, among many completed compactions", async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, turn(0));
    const running = (id: string) =>
      insertCompaction(t.db, {
        id,
        sessionPk: session.pk,
        reason: 'manual',
        strategy: 'summarize',
        status: 'running',
        coversThroughSeq: 1,
      });
    const sizeOf = (compactionId: string) =>
      compileNamed(
        measuredSizeSql({
          compactionId,
          sessionPk: session.pk,
          fence: 1,
          boundarySeq: 2,
          summaryMessages: [],
          tokensBefore: 100,
          messagesBefore: 2,
          finishedAt: new Date(),
          pinSystemMessages: true,
        }),
      );
    // Planned (generic) while the session has no completed compaction; the row is running, so
    // the statement sizes nothing.
    await running('cmp_size_first');
    const first = sizeOf('cmp_size_first');
    await client.query(`prepare plan_size as ${first.text}`);
    await explainPrepared('plan_size', first.params);

    // 300 compactions complete (each finalize also sizes its row), then one more is sized.
    await t.db.execute(sql`update compactions set status = 'failed' where id = 'cmp_size_first'`);
    for (let i = 0; i < 300; i++) {
      await running(`cmp_size_${i}`);
      await completeCompaction(t.db, {
        compactionId: `cmp_size_${i}`,
        sessionPk: session.pk,
        boundarySeq: 2,
        summaryMessages: [],
        tokensBefore: 100,
        messagesBefore: 2,
        finishedAt: new Date(),
      });
    }
    await running('cmp_size_last');
    await t.db.execute(
      sql`update compactions set status = 'completed', fence = 1, finished_at = now() where id = 'cmp_size_last'`,
    );
    const last = sizeOf('cmp_size_last');
    expect(last.text).toBe(first.text);
    const plan = await explainPrepared('plan_size', last.params);
    // It found its own row by key, and sized it.
    expect(mostRowsRead(plan, 'compactions')).toBeLessThan(5);
    const { rows } = await t.db.execute(sql`select tokens_after from compactions where id = 'cmp_size_last'`);
    expect(rows[0]).toEqual({ tokens_after: expect.any(Number) });
  });
});
