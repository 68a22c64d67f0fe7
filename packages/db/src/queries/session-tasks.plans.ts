/**
 * Captures the task registry's plans at production size (docs/plans/session-tasks-100k.txt):
 * `npx tsx packages/db/src/queries/session-tasks.plans.ts [admin-url]`. A scratch database holds
 * one session of 100,000 messages (50,000 tool calls, 5,000 of them tasks, 300 running) beside
 * 10 other tenants' sessions of 20,000 messages and 1,000 tasks each. Every statement is prepared
 * and explained as the generic plan a pooled connection reuses (`plan_cache_mode =
 * force_generic_plan`), with EXPLAIN (ANALYZE, BUFFERS).
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { sql, type SQL } from 'drizzle-orm';
import { compileNamed } from '../prepared';
import { appendedTaskCallsSql, upsertSessionTasksSql } from './session-tasks';
import { migrateDatabase } from '../migrate';
import { createScratchDatabase, dropScratchDatabase } from '../scratch-database';
import { TASKS_BLOCK_MAX_FINISHED, TASKS_BLOCK_MAX_TASKS } from '@compactor/core';

const admin = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `compactor_session_tasks_plans_${Date.now()}`;

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value))
    return `'{${value.map((v) => (v === null ? 'NULL' : `"${String(v instanceof Date ? v.toISOString() : v).replaceAll('"', '\\"')}"`)).join(',')}}'`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return `'${String(value).replaceAll("'", "''")}'`;
}

async function seed(client: pg.Client) {
  // Session 1: 100,000 messages, one tool call on each assistant message; every tenth call a Task.
  // Sessions 2-11: other tenants, 20,000 messages each.
  await client.query(`insert into sessions (tenant_id, id, model_id, provider, context_window, max_output_tokens, create_hash)
    select 'tenant-' || s, 'ses-' || s, 'gpt-4o', 'openai', 128000, 16384, 'h' from generate_series(1, 11) s`);
  await client.query(`insert into messages (session_pk, seq, id, role, content_hash, created_at)
    select s.pk, g, 'm' || g, case when g % 2 = 0 then 'assistant' else 'user' end, 'h', now() - (200000 - g) * interval '1 second'
    from sessions s, generate_series(1, 100000) g where s.pk = 1 or g <= 20000`);
  await client.query(`insert into parts (message_pk, session_pk, seq, idx, type, text, call_id, tool, tool_status, tool_input, tool_output, tokens)
    select m.pk, m.session_pk, m.seq, 0,
      case when m.role = 'assistant' then 'tool' else 'text' end,
      case when m.role = 'user' then 'please continue with step ' || m.seq end,
      case when m.role = 'assistant' then 'call_' || m.seq end,
      case when m.role = 'assistant' then (case when m.seq % 20 = 0 then 'Task' else 'read' end) end,
      case when m.role = 'assistant' then (case when m.seq % 20 = 0 and m.seq > 94000 then 'running' else 'completed' end) end,
      case when m.role = 'assistant' then jsonb_build_object('prompt', 'port module ' || m.seq) end,
      case when m.role = 'assistant' then repeat('output ', 40) end,
      60
    from messages m`);
  await client.query(`insert into session_tasks (session_pk, tenant_id, call_id, message_id, seq, tool, status, asked, dedupe_key, outcome, started_at, finished_at)
    select p.session_pk, s.tenant_id, p.call_id, 'm' || p.seq, p.seq, p.tool, p.tool_status, 'prompt: port module ' || p.seq,
      md5(p.call_id), case when p.tool_status = 'completed' then 'done' end,
      now() - (200000 - p.seq) * interval '1 second',
      case when p.tool_status = 'completed' then now() - (200000 - p.seq - 5) * interval '1 second' end
    from parts p join sessions s on s.pk = p.session_pk where p.tool = 'Task'`);
  await client.query('analyze');
}

async function explain(client: pg.Client, title: string, query: SQL, out: string[]) {
  const { text, params } = compileNamed(query);
  const stmt = `p${out.length}`;
  await client.query(`prepare ${stmt} as ${text}`);
  const { rows } = await client.query(
    `explain (analyze, buffers) execute ${stmt}(${params.map(literal).join(', ')})`,
  );
  out.push(`== ${title}`, ...rows.map((r: Record<string, string>) => r['QUERY PLAN']!), '');
}

async function main() {
  const root = new pg.Client(admin);
  await root.connect();
  await createScratchDatabase(root, name, { purpose: 'session-tasks plans' });
  const url = admin.replace(/\/[^/]*$/, `/${name}`);
  try {
    await migrateDatabase(url);
    const client = new pg.Client(url);
    await client.connect();
    const started = Date.now();
    await seed(client);
    const seeded = Date.now() - started;
    const counts =
      await client.query(`select (select count(*) from messages) as messages, (select count(*) from parts) as parts,
      (select count(*) from session_tasks) as tasks, (select count(*) from session_tasks where session_pk = 1 and status = 'running') as running`);
    await client.query('set plan_cache_mode = force_generic_plan');
    const out: string[] = [];
    const session = 1;
    await explain(
      client,
      'selectTasksForBlock: running oldest first (501) + newest finished (21)',
      sql`
    (select call_id, tool, status, asked, dedupe_key, message_id, seq, started_at, finished_at, outcome, delivered_seq, 0 as side from session_tasks
      where session_pk = ${session} and status in ('pending', 'running')
      order by started_at, call_id limit ${TASKS_BLOCK_MAX_TASKS + 1})
    union all
    (select call_id, tool, status, asked, dedupe_key, message_id, seq, started_at, finished_at, outcome, delivered_seq, 1 as side from session_tasks
      where session_pk = ${session} and status in ('completed', 'error')
      order by finished_at desc, call_id limit ${TASKS_BLOCK_MAX_FINISHED + 1})`,
      out,
    );
    await explain(
      client,
      'countRunningTasks',
      sql`select count(*) as n from (select 1 from session_tasks
      where session_pk = ${session} and status in ('pending', 'running') limit 100000) r`,
      out,
    );
    await explain(
      client,
      'listSessionTasks: a page of 100 from a cursor in the middle',
      sql`
    select call_id, seq from session_tasks
    where session_pk = ${session} and seq <= ${50000}::int
      and (seq < ${50000}::int or call_id > ${'call_50000'}::text)
    order by seq desc, call_id limit ${101}`,
      out,
    );
    await explain(
      client,
      'findSessionTask',
      sql`select call_id from session_tasks where session_pk = ${session} and call_id = ${'call_99980'}`,
      out,
    );
    await explain(
      client,
      'finishSessionTask',
      sql`
    update session_tasks set status = ${'completed'}, outcome = ${'ok'},
      finished_at = case when ${true} then coalesce(finished_at, ${new Date().toISOString()}::timestamptz) else finished_at end,
      delivered_seq = coalesce(${null}::int, delivered_seq)
    where session_pk = ${session} and call_id = ${'call_99980'} and status in ('pending', 'running')`,
      out,
    );
    await explain(
      client,
      'markTaskDelivered',
      sql`update session_tasks set delivered_seq = ${100001}::int
      where session_pk = ${session} and call_id = ${'call_99960'}`,
      out,
    );
    const startedAt = new Date().toISOString();
    const records = Array.from({ length: 10 }, (_, i) => ({
      callId: `call_new_${i}`,
      tool: 'Task',
      status: 'running' as const,
      asked: 'prompt: x',
      dedupeKey: `call_new_${i}`,
      messageId: `m${100001 + i}`,
      seq: 100001 + i,
      startedAt,
      finishedAt: null,
      outcome: null,
    }));
    await explain(
      client,
      'upsertSessionTasks: an append of 10 task calls',
      upsertSessionTasksSql({ pk: session, tenantId: 'tenant-1' }, records),
      out,
    );
    const names = ['task', 'agent', 'spawnagent', 'bash'];
    await explain(
      client,
      'selectAppendedTaskCalls: the last append of 10 messages',
      appendedTaskCallsSql(session, { fromSeq: 99991, toSeq: 100000, toolNames: names }),
      out,
    );
    await explain(
      client,
      'selectAppendedTaskCalls: a large append of 10,000 messages (5,000 tool calls, 500 tasks)',
      appendedTaskCallsSql(session, { fromSeq: 90001, toSeq: 100000, toolNames: names }),
      out,
    );
    await client.end();
    const c = counts.rows[0] as Record<string, string>;
    console.log(
      [
        `Task registry statements (db queries/session-tasks.ts), ${new Date().toISOString().slice(0, 10)}, migrations through 0025,`,
        `generic plans (plan_cache_mode = force_generic_plan), EXPLAIN (ANALYZE, BUFFERS). Seeded in ${seeded} ms:`,
        `${c.messages} messages, ${c.parts} parts, ${c.tasks} session_tasks rows in 11 sessions of 11 tenants;`,
        `the measured session: 100,000 messages, 5,000 tasks, ${c.running} running. Load average while measuring:`,
        `${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')} (2 cores shared with other work). Command:`,
        'npx tsx packages/db/src/queries/session-tasks.plans.ts',
        '',
        ...out,
      ].join('\n'),
    );
  } finally {
    await dropScratchDatabase(root, name);
    await root.end();
  }
}

await main();
