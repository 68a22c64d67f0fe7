/**
 * Set-based seeding for the scale benchmark: whole sessions in a handful of `INSERT … SELECT
 * generate_series` statements, in the shape the service writes (appendToSession, completeCompaction,
 * prune), because seeding 100,000-message sessions through the API would take many minutes.
 */
import { spawnSync } from 'node:child_process';
import type pg from 'pg';

/** A group of sessions seeded alike, in one set of statements. */
export interface SessionShape {
  tenantId: string;
  /** Session ids are `${idPrefix}${n}`, n from 1. */
  idPrefix: string;
  sessions: number;
  /** Messages per session: user and assistant alternate, seq 1 is a user message. */
  messages: number;
  /** Characters of each tool output (every assistant message carries one tool part). */
  outputChars: number;
  /**
   * A completed compaction keeping the newest `keep` messages (its summary after them), and the
   * older tool outputs pruned as earlier prunes would have left them; null: never compacted.
   */
  keep: number | null;
}

/** Assistant messages report usage like a real turn: a context that grows, then levels off. */
const USAGE_COLUMNS = `
  case when g % 2 = 0 then 20000 + (g % 500) * 200 end,
  case when g % 2 = 0 then 300 end,
  case when g % 2 = 0 then 0 end,
  case when g % 2 = 0 then 15000 end,
  case when g % 2 = 0 then 0 end`;

/** Newest tool outputs a prune leaves alone (OpenCode's 40,000 protected tokens ≈ 73 outputs). */
const UNPRUNED_TAIL = 150;

/**
 * 1,024 distinct ~2 KB texts (md5 chains: hex that pglz cannot squeeze to nothing), joined to
 * tool parts by pk so outputs differ from their neighbours as real file reads do.
 */
export async function createOutputCorpus(pool: pg.Pool): Promise<void> {
  await pool.query(`
    create table if not exists bench_outputs as
    select n, string_agg(md5(n::text || ':' || k::text) || case when k % 3 = 0 then E'\\n' else ' ' end, '' order by k) as body
    from generate_series(0, 1023) n, generate_series(1, 62) k group by n`);
}

/** Inserts the sessions, their messages, parts, compaction and prunes; returns the session pks. */
export async function seedSessions(pool: pg.Pool, shape: SessionShape): Promise<number[]> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const inserted = await client.query<{ pk: string }>(
      `insert into sessions (tenant_id, id, model_id, provider, context_window, max_output_tokens, create_hash, last_seq)
       select $1, $2 || n, 'gpt-4o', 'openai', 128000, 16384, 'bench', $3
       from generate_series(1, $4::int) n order by n returning pk`,
      [shape.tenantId, shape.idPrefix, shape.messages, shape.sessions],
    );
    const pks = inserted.rows.map((r) => Number(r.pk));
    // Rows of concurrent sessions interleave on disk (ordered by seq, then session), as appends
    // from many live sessions do.
    await client.query(
      `insert into messages (session_pk, seq, id, role, finish, usage_input, usage_output, usage_reasoning,
                             usage_cache_read, usage_cache_write, content_hash, created_at)
       select s.pk, g, 'm' || g, case when g % 2 = 1 then 'user' else 'assistant' end,
              case when g % 2 = 0 then 'tool-calls' end, ${USAGE_COLUMNS},
              md5(s.pk || ':' || g), timestamptz '2025-01-01' + g * interval '1 second'
       from unnest($1::bigint[]) s(pk), generate_series(1, $2::int) g
       order by g, s.pk`,
      [pks, shape.messages],
    );
    await client.query(
      `insert into parts (message_pk, session_pk, seq, idx, type, text, tokens)
       select m.pk, m.session_pk, m.seq, 0, 'text',
              case when m.role = 'user' then 'please look at module ' || m.seq || ' and fix the failing test in it'
                   else 'Reading src/module' || m.seq || '.ts' end,
              case when m.role = 'user' then 14 else 6 end
       from messages m where m.session_pk = any($1::bigint[]) order by m.pk`,
      [pks],
    );
    // ~3.7 characters per token for this text; the part's total adds the call's input.
    await client.query(
      `insert into parts (message_pk, session_pk, seq, idx, type, call_id, tool, tool_status, tool_input,
                          tool_output, tokens, output_tokens)
       select m.pk, m.session_pk, m.seq, 1, 'tool', 'call_' || m.seq,
              case when m.seq % 4 = 0 then 'bash' else 'read' end, 'completed',
              case when m.seq % 4 = 0 then jsonb_build_object('command', 'npm test -- module' || m.seq)
                   else jsonb_build_object('path', 'src/module' || m.seq || '.ts') end,
              left(m.seq || ': ' || o.body, $2::int),
              round($2 / 3.7)::int + 50, round($2 / 3.7)::int
       from messages m join bench_outputs o on o.n = m.pk % 1024
       where m.session_pk = any($1::bigint[]) and m.role = 'assistant' order by m.pk`,
      [pks, shape.outputChars],
    );
    if (shape.keep !== null) await compact(client, pks, shape.messages, shape.keep);
    await client.query('commit');
    return pks;
  } catch (error) {
    await client.query('rollback');
    throw error;
  } finally {
    client.release();
  }
}

/**
 * What a completed auto compaction leaves (see completeCompaction): its summary message at the
 * next seq (`summary`, the compaction's id), the boundary keeping the newest `keep` messages,
 * `covers_through_seq` the last seq when it started; and the tool outputs that prunes before it
 * marked (all but the newest {@link UNPRUNED_TAIL} messages' outputs).
 */
async function compact(client: pg.PoolClient, pks: number[], messages: number, keep: number): Promise<void> {
  const summarySeq = messages + 1;
  const finished = `timestamptz '2025-01-01' + ${summarySeq} * interval '1 second'`;
  await client.query(
    `insert into messages (session_pk, seq, id, role, finish, metadata, summary, compaction_id, content_hash, created_at)
     select pk, $2, 'summary_' || pk, 'assistant', 'stop', '{"type":"compaction_summary"}', true,
            'cmp_' || pk, md5('summary' || pk), ${finished}
     from unnest($1::bigint[]) pk`,
    [pks, summarySeq],
  );
  await client.query(
    `insert into parts (message_pk, session_pk, seq, idx, type, text, tokens)
     select m.pk, m.session_pk, m.seq, 0, 'text', '## Goal' || E'\\n' || repeat('Summary of the work so far. ', 300), 1900
     from messages m where m.session_pk = any($1::bigint[]) and m.summary`,
    [pks],
  );
  await client.query(
    `insert into compactions (id, session_pk, tenant_id, reason, strategy, status, attempts, fence, covers_through_seq,
                              boundary_seq, summary_message_ids, tokens_before, tokens_after, messages_before,
                              messages_after, model, requested_at, started_at, progress_at, finished_at)
     select 'cmp_' || s.pk, s.pk, s.tenant_id, 'auto', 'summarize', 'completed', 1, 1, $2, $3, array['summary_' || s.pk],
            118000, 60000, $2, $4, 'gpt-4o-mini', ${finished} - interval '20 seconds',
            ${finished} - interval '19 seconds', ${finished}, ${finished}
     from sessions s where s.pk = any($1::bigint[])`,
    [pks, messages, messages - keep + 1, keep + 1],
  );
  await client.query(`update sessions set last_seq = $2 where pk = any($1::bigint[])`, [pks, summarySeq]);
  await client.query(
    `insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
     select p.session_pk, p.seq, p.idx, timestamptz '2025-01-01' + p.seq * interval '1 second', 'prune_' || p.session_pk
     from parts p where p.session_pk = any($1::bigint[]) and p.type = 'tool' and p.seq <= $2`,
    [pks, messages - UNPRUNED_TAIL],
  );
}

/** Seeds one group and reports how long it took and how much it added. */
export async function seedTimed(pool: pg.Pool, shape: SessionShape): Promise<{ pks: number[]; ms: number }> {
  const started = performance.now();
  const pks = await seedSessions(pool, shape);
  return { pks, ms: performance.now() - started };
}

/**
 * Leaves the tables as a steady-state service has them, so background work does not land in the
 * timings: vacuumed and analyzed (autovacuum does both after a bulk insert), checkpointed, and
 * the OS's dirty pages written (`sync`: seeding leaves gigabytes to write back).
 */
export async function settle(pool: pg.Pool): Promise<void> {
  await pool.query('vacuum (analyze) sessions, messages, parts, part_prunes, compactions');
  await pool.query('checkpoint');
  spawnSync('sync');
}

/** Sizes of the tables the hot paths read, for the report. */
export async function tableSizes(pool: pg.Pool): Promise<string> {
  const result = await pool.query<{ name: string; rows: string; size: string }>(`
    select c.relname as name, c.reltuples::bigint::text as rows, pg_size_pretty(pg_total_relation_size(c.oid)) as size
    from pg_class c
    -- Our tables only: the analytics schema has views of the same names.
    where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace
      and c.relname in ('messages', 'parts', 'part_prunes', 'compactions', 'sessions')
    order by c.relname`);
  return result.rows
    .map((r) => `${r.name} ${Number(r.rows).toLocaleString('en-US')} rows ${r.size}`)
    .join(', ');
}
