/**
 * Query plans of the hot paths: the SQL a function sends is recorded from the pool (whatever
 * drizzle builds, so the plans follow the code), then each statement is re-run under
 * `EXPLAIN (ANALYZE, BUFFERS)` with the same parameters inside a transaction that is rolled back
 * (appends and prunes write).
 */
import { writeFileSync } from 'node:fs';
import type pg from 'pg';
import { ms } from './report';
import { tableSizes } from './seed';

/** One statement as a function sent it. */
export interface RecordedQuery {
  text: string;
  values: unknown[];
  /** Wall time from sending it to its result (an autocommit statement's includes its commit). */
  ms?: number;
}

/** Transaction control and session settings: nothing to plan. */
const CONTROL = /^\s*(begin|start transaction|commit|rollback|set|savepoint|release)\b/i;

/**
 * Records the statements sent through `pool` while `work` runs. Every client is wrapped when
 * it is checked out (`pool.query` checks one out too), so transactions are seen as well.
 */
export class QueryRecorder {
  private recording: RecordedQuery[] | null = null;
  private readonly wrapped = new WeakSet<pg.PoolClient>();

  constructor(pool: pg.Pool) {
    pool.on('acquire', (client) => this.wrap(client));
  }

  /** What `work` returned or threw, and the statements it sent (control statements left out). */
  async record<T>(
    work: () => Promise<T>,
  ): Promise<{ result: T | undefined; error: unknown; queries: RecordedQuery[] }> {
    const queries: RecordedQuery[] = [];
    this.recording = queries;
    let result: T | undefined;
    let error: unknown = null;
    try {
      result = await work();
    } catch (thrown) {
      error = thrown;
    } finally {
      this.recording = null;
    }
    return { result, error, queries: queries.filter((q) => !CONTROL.test(q.text)) };
  }

  private wrap(client: pg.PoolClient): void {
    if (this.wrapped.has(client)) return;
    this.wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      if (!this.recording) return query(...args);
      const [first, second] = args;
      // db's pipelines (`executePipelined`, `pipelinedTransaction`) submit their statements as
      // one object: each is recorded, in order, all timed by the round trip that carries them.
      const piped = (first as { statements?: Array<{ text: string; params: unknown[] }> }).statements;
      const entries: RecordedQuery[] = Array.isArray(piped)
        ? piped.map((statement) => ({ text: statement.text, values: statement.params }))
        : [recordedOf(first, second)];
      this.recording.push(...entries);
      const started = performance.now();
      const done = () => {
        for (const entry of entries) entry.ms = performance.now() - started;
      };
      // `pool.query` passes a callback; drizzle's clients await the returned promise.
      const last = args.at(-1);
      if (typeof last === 'function') {
        const callback = last as (...results: unknown[]) => unknown;
        args[args.length - 1] = (...results: unknown[]) => {
          done();
          return callback(...results);
        };
        return query(...args);
      }
      const result = query(...args);
      // A pipeline's `done` settles when its round trip has.
      const settled = result instanceof Promise ? result : (first as { done?: unknown }).done;
      if (settled instanceof Promise) settled.then(done, done);
      return result;
    };
  }
}

/** A `client.query(text, values)` or `client.query({ text, values })` as recorded. */
function recordedOf(first: unknown, second: unknown): RecordedQuery {
  const config =
    typeof first === 'string' ? { text: first } : (first as { text: string; values?: unknown[] });
  return { text: config.text, values: Array.isArray(second) ? second : (config.values ?? []) };
}

/** What a plan says in one line: time, buffers, and how each table was scanned. */
export interface PlanSummary {
  executionMs: number;
  /** Shared buffers hit + read by the whole statement. */
  buffers: number;
  /** `Seq Scan parts (rows 120, removed 3,000,000)`, one per scan node. */
  scans: string[];
  /** Whether a sequential scan of a table whose rows belong to many sessions appears. */
  seqScanOfSessionTables: boolean;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

const SESSION_TABLES = new Set(['messages', 'parts', 'part_prunes', 'compactions']);

function summarize(root: PlanNode, executionMs: number): PlanSummary {
  const scans: string[] = [];
  let seqScanOfSessionTables = false;
  const visit = (node: PlanNode) => {
    if (node['Relation Name']) {
      // EXPLAIN gives rows per loop, rounded: a lookup repeated per row is shown as such.
      const loops = node['Actual Loops'] ?? 1;
      const count = (n: number) => n.toLocaleString('en-US');
      const perLoop = (n: number) => (loops > 1 ? `${count(n)}/loop × ${count(loops)}` : count(n));
      const removed = (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0);
      const on = node['Index Name'] ? ` ${node['Index Name']}` : '';
      scans.push(
        `${node['Node Type']} ${node['Relation Name']}${on} (rows ${perLoop(node['Actual Rows'] ?? 0)}` +
          `${removed ? `, removed ${perLoop(removed)}` : ''})`,
      );
      if (node['Node Type'] === 'Seq Scan' && SESSION_TABLES.has(node['Relation Name']))
        seqScanOfSessionTables = true;
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(root);
  return {
    executionMs,
    buffers: (root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0),
    scans,
    seqScanOfSessionTables,
  };
}

/**
 * The text plan and its summary for one recorded statement, executed and rolled back. `setup`
 * runs first in the same transaction: what puts the rows back the way the statement found them
 * (an append's insert, re-run after the append, would hit its own rows).
 */
export async function explain(
  pool: pg.Pool,
  query: RecordedQuery,
  setup: RecordedQuery[] = [],
): Promise<{ text: string; summary: PlanSummary | null }> {
  const client = await pool.connect();
  const begin = async () => {
    await client.query('begin');
    for (const statement of setup) await client.query(statement.text, statement.values);
  };
  try {
    await begin();
    const text = await client.query<{ 'QUERY PLAN': string }>(
      `explain (analyze, buffers) ${query.text}`,
      query.values,
    );
    await client.query('rollback');
    await begin();
    const json = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number }> }>(
      `explain (analyze, buffers, format json) ${query.text}`,
      query.values,
    );
    const [plan] = json.rows[0]!['QUERY PLAN'];
    return {
      // Lines quoting a parameter array of 100,000 keys are cut: the plan's shape is what matters.
      text: text.rows.map((r) => shorten(r['QUERY PLAN'], 600)).join('\n'),
      summary: plan ? summarize(plan.Plan, plan['Execution Time']) : null,
    };
  } catch (error) {
    return {
      text: `(explain failed: ${error instanceof Error ? error.message : String(error)})`,
      summary: null,
    };
  } finally {
    await client.query('rollback').catch(() => undefined);
    client.release();
  }
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

/** The statement, shortened for a heading: whitespace collapsed, at most `max` characters. */
export function shortSql(text: string, max = 160): string {
  return shorten(text.replace(/\s+/g, ' ').trim(), max);
}

/**
 * `record(name, work)`: runs `work`, and adds the statements it sent to `paths` under `name`
 * (marked when it failed); returns the entry, so a caller can give it a `setup`.
 */
export function pathRecorder(recorder: QueryRecorder, paths: RecordedPath[]) {
  return async (name: string, work: () => Promise<unknown>): Promise<RecordedPath> => {
    const { queries, error } = await recorder.record(work);
    const failed = error ? ` (failed: ${String(error).slice(0, 120)})` : '';
    paths.push({ name: `${name}${failed}`, queries });
    return paths.at(-1)!;
  };
}

/** A hot path's statements, and what to run before re-running each for its plan. */
export interface RecordedPath {
  name: string;
  queries: RecordedQuery[];
  setup?: (query: RecordedQuery) => RecordedQuery[];
}

/**
 * Explains every statement of `paths`, writes the plans to `file` (and stdout when `print`), and
 * prints one summary per statement: time, buffers, and each scan, a shared table's seq scan flagged.
 */
export async function writePlans(
  pool: pg.Pool,
  paths: RecordedPath[],
  file: string,
  print: boolean,
): Promise<void> {
  const out: string[] = [`Query plans, ${new Date().toISOString()}`, await tableSizes(pool), ''];
  console.log(`\nquery plans at 100k (full text in ${file}):`);
  for (const { name, queries, setup } of paths) {
    console.log(`${name}:`);
    for (const query of queries) {
      const { text, summary } = await explain(pool, query, setup?.(query));
      const params = JSON.stringify(query.values);
      out.push(`== ${name}`, query.text.trim(), `-- params: ${shorten(params, 400)}`, text, '');
      const flag = summary?.seqScanOfSessionTables ? '  ← SEQ SCAN of a shared table' : '';
      const figures = summary
        ? `${ms(summary.executionMs).padStart(11)} ${String(summary.buffers).padStart(7)} buf`
        : '   explain failed   ';
      console.log(`  ${figures}  ${shortSql(query.text, 90)}${flag}`);
      console.log(`      ${summary ? summary.scans.join('; ') : text}`);
    }
  }
  writeFileSync(file, out.join('\n'));
  if (print) console.log(out.join('\n'));
}

/** Shared buffers the statements `work` sends touch, each re-run under EXPLAIN; undefined if one fails. */
export async function pathBuffers(
  pool: pg.Pool,
  recorder: QueryRecorder,
  work: () => Promise<unknown>,
): Promise<number | undefined> {
  const { queries, error } = await recorder.record(work);
  if (error) return undefined;
  let total = 0;
  for (const query of queries) {
    const { summary } = await explain(pool, query);
    if (!summary) return undefined;
    total += summary.buffers;
  }
  return total;
}
