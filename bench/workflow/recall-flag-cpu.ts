/**
 * The recall flag update's CPU, one compaction window, before and after migration 0030 on the
 * same data: `npx tsx bench/workflow/recall-flag-cpu.ts` (BENCH_DATABASE_URL, a scratch database
 * created and dropped; BENCH_FLAG_ROUNDS, default 10).
 *
 * One session of the workflow bench's messages (`benchMessage`: 240 messages, 360 parts, ~231 KB
 * as a 300-message window of bench part 1a flags), measured twice: with the bench's outputs (one
 * line repeated 40 times: few distinct words) and with each output replaced by as many
 * characters of this repository's source and docs (code and prose: many distinct words). Each
 * measurement is one transaction, rolled back, after 20 rounds unrecorded (a warm JIT); the two
 * variants alternate within each round:
 *  - `0029, parser words`: the search index as migration 0029 spelled it (an expression of the
 *    text, Postgres's parser for every flagged part: built again in the transaction, over
 *    unflagged parts, so no words computed) and the flag statement of 80e8501 (copied below);
 *  - `0030, worker words`: db `markRecallableBehind` as it is: texts read, words computed in
 *    this process (core `recallVectorOf`), sent as tsvector literals into `recall_words`.
 *  - `prune 0029` and `prune 0030`: a prune job's flagging of the window's outputs (every one
 *    marked by it), 80e8501's statement (copied below) against db `markPrunedRecallable`.
 * The backend's CPU is read from `/proc/<pid>/schedstat` and this process's from
 * `process.cpuUsage` around the flag call alone.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { sql } from 'drizzle-orm';
import { createDatabase, markPrunedRecallable, markRecallableBehind, type DbOrTx } from '@compactor/db';
import { recallArgumentsOf } from '../../packages/db/src/queries/recall-arguments';
import { dropDatabase, freshDatabase } from '../processes';
import { seedSessions } from './sessions';

const URL =
  process.env.BENCH_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/compactor_bench_flag_${process.pid}`;
const ROUNDS = Number(process.env.BENCH_FLAG_ROUNDS ?? 10);
const WARMUP_ROUNDS = 20;
const MESSAGES = 240;
const ROOT = join(import.meta.dirname, '..', '..');

/** Thrown to roll a measurement's transaction back. */
class RolledBack extends Error {}

/** Migration 0029's index: the parser's words of the text, computed by every update that flags. */
const EXPRESSION_INDEX = `create index parts_recall_search_idx on parts using gin (session_pk,
  to_tsvector('simple'::regconfig, replace(replace(replace(replace(replace(
    left(coalesce("text", "tool_output", "tool_error", ''), 100000), '/', ' '), '.', ' '), '@', ' '), ':', ' '), '\\', ' ')))
  where recallable and type in ('text', 'reasoning', 'tool')`;

/** The flag update of 80e8501 (db recallable.ts `flagSeqsWithArguments`), for the baseline. */
async function flagAsBefore(db: DbOrTx, sessionPk: number, from: number, before: number): Promise<number> {
  const { rows: calls } = await db.execute<{
    pk: number;
    tool: string;
    tool_status: string;
    tool_input: unknown;
  }>(
    sql`select pk, tool, tool_status, tool_input from parts
        where session_pk = ${sessionPk} and seq >= ${from}::int and seq < ${before}::int
          and type = 'tool' and recall_arguments is null`,
  );
  const args = calls.flatMap((c) => {
    const words = recallArgumentsOf({
      tool: c.tool,
      status: c.tool_status as 'completed',
      input: c.tool_input,
    });
    return words === null ? [] : [{ pk: Number(c.pk), words }];
  });
  const { rows } = await db.execute<{ flagged: string }>(
    sql`with args as (
          select * from unnest(${sql.param(args.map((c) => c.pk))}::bigint[], ${sql.param(args.map((c) => c.words))}::text[]) as v(pk, words)
        ),
        written as (
          update parts p set recallable = true, recall_arguments = coalesce(a.words, p.recall_arguments)
          from parts q left join args a on a.pk = q.pk
          where p.pk = q.pk and q.session_pk = ${sessionPk} and q.seq >= ${from}::int and q.seq < ${before}::int
            and q.type in ('text', 'reasoning', 'tool') and (not q.recallable or a.pk is not null)
            and q.seq <> all (array(select m.seq from messages m where m.session_pk = ${sessionPk} and m.summary
                                     and m.seq >= ${from}::int and m.seq < ${before}::int))
          returning not q.recallable as flipped
        )
        select count(*) filter (where flipped) as flagged from written`,
  );
  return Number(rows[0]?.flagged ?? 0);
}

/** A prune's flagging of its marked outputs as 80e8501 wrote it (db recallable.ts `flagWithArguments`). */
async function pruneFlagAsBefore(db: DbOrTx, sessionPk: number): Promise<number> {
  const { rows: flips } = await db.execute<{
    pk: number;
    tool: string;
    tool_status: string;
    tool_input: unknown;
  }>(
    sql`select p.pk, p.tool, p.tool_status, p.tool_input from part_prunes pp
        join parts p on p.session_pk = pp.session_pk and p.seq = pp.seq and p.idx = pp.idx
        where pp.session_pk = ${sessionPk} and pp.compacted_by = 'bench_prune' and not p.recallable`,
  );
  const words = flips.map((f) =>
    recallArgumentsOf({ tool: f.tool, status: f.tool_status as 'completed', input: f.tool_input }),
  );
  const { rows } = await db.execute<{ flagged: string }>(
    sql`with flagged as (
          update parts p set recallable = true, recall_arguments = coalesce(v.words, p.recall_arguments)
          from unnest(${sql.param(flips.map((f) => Number(f.pk)))}::bigint[], ${sql.param(words)}::text[]) as v(pk, words)
          where p.pk = v.pk and p.session_pk = ${sessionPk} and not p.recallable
          returning 1
        )
        select count(*) as flagged from flagged`,
  );
  return Number(rows[0]?.flagged ?? 0);
}

/** This repository's TypeScript and Markdown, concatenated: real code and prose. */
function repositoryText(chars: number): string {
  let text = '';
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (text.length >= chars || name === 'node_modules' || name.startsWith('.')) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|md)$/.test(name)) text += readFileSync(path, 'utf8');
    }
  };
  walk(join(ROOT, 'packages'));
  walk(join(ROOT, 'docs'));
  return text;
}

const cpuMs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
const ownMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

await freshDatabase(URL);
// One connection: the transaction's backend is the one whose CPU is read.
const database = createDatabase(URL, {
  max: 1,
  statementTimeoutMs: 0,
  applicationName: 'compactor-bench-flag',
});
const { db } = database;
try {
  const [session] = await seedSessions(db, 1, MESSAGES);
  const pk = session!.pk;
  const { rows: pids } = await db.execute<{ pid: number }>(sql`select pg_backend_pid() as pid`);
  const pid = pids[0]!.pid;
  // Every output marked pruned by one job, for the prune variants (the window's flag ignores marks).
  await db.execute(sql`insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
    select session_pk, seq, idx, now(), 'bench_prune' from parts where session_pk = ${pk} and type = 'tool'`);
  for (const dataset of ['bench outputs', 'repository text'] as const) {
    if (dataset === 'repository text') {
      // Each output replaced by as many characters of real code and prose, in order.
      const { rows: outputs } = await db.execute<{ pk: number; length: number }>(sql`
        select pk, length(tool_output)::int as length from parts
        where session_pk = ${pk} and type = 'tool' order by seq, idx`);
      const corpus = repositoryText(outputs.reduce((sum, o) => sum + o.length, 0));
      let at = 0;
      for (const output of outputs) {
        await db.execute(
          sql`update parts set tool_output = ${corpus.slice(at, at + output.length)} where pk = ${output.pk}`,
        );
        at += output.length;
      }
    }
    const { rows: sizes } = await db.execute<{ parts: number; chars: number; seqs: number }>(sql`
      select count(*)::int as parts, sum(length(coalesce(text, tool_output, tool_error, '')))::int as chars,
             max(seq) + 1 as seqs
      from parts where session_pk = ${pk}`);
    const { parts, chars, seqs } = sizes[0]!;
    const variants = [
      '0029, parser words',
      '0030, worker words',
      'prune 0029, parser',
      'prune 0030, worker',
    ] as const;
    const samples = new Map<string, { pg: number[]; worker: number[]; flagged: number }>();
    // Rounds before the measured ones warm the JIT up, as a worker's thousandth compaction is
    // (the first calls of the tokenizer cost several times a warm one).
    for (let round = -WARMUP_ROUNDS; round < ROUNDS; round++) {
      for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
        await db
          .transaction(async (tx) => {
            if (variant.includes('0029')) {
              await tx.execute(sql.raw(`drop index parts_recall_search_idx`));
              await tx.execute(sql.raw(EXPRESSION_INDEX));
              // 0029 had no words column: its trigger would compute the words a second time.
              await tx.execute(sql.raw(`alter table parts disable trigger parts_recall_words_missing`));
            }
            const pgBefore = cpuMs(pid);
            const workerBefore = ownMs();
            const flagged =
              variant === '0029, parser words'
                ? await flagAsBefore(tx, pk, 0, seqs)
                : variant === '0030, worker words'
                  ? await markRecallableBehind(tx, pk, seqs, 500, 0)
                  : variant === 'prune 0029, parser'
                    ? await pruneFlagAsBefore(tx, pk)
                    : await markPrunedRecallable(tx, pk, 'bench_prune', { first: 0, last: seqs }, 500, {
                        yieldRatio: 0,
                      });
            if (round < 0) throw new RolledBack();
            const sample = samples.get(variant) ?? { pg: [], worker: [], flagged };
            sample.pg.push(cpuMs(pid) - pgBefore);
            sample.worker.push(ownMs() - workerBefore);
            samples.set(variant, sample);
            throw new RolledBack();
          })
          .catch((error: unknown) => {
            if (!(error instanceof RolledBack)) throw error;
          });
      }
    }
    console.log(
      `${dataset}: ${seqs} messages, ${parts} parts, ${(chars / 1000).toFixed(0)} K characters; ${ROUNDS} rounds; load ${load()}`,
    );
    // The CPU moves with the machine's load: each variant against the first in the same round.
    for (const [variant, { pg, worker, flagged }] of samples) {
      const first = samples.get(variant.startsWith('prune') ? variants[2] : variants[0])!;
      const total = pg.map((value, round) => value + worker[round]!);
      const firstTotal = first.pg.map((value, round) => value + first.worker[round]!);
      const paired = (values: number[], base: number[]) => {
        const ratios = values.map((value, round) => value / base[round]!);
        return `${median(ratios).toFixed(3)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
      };
      console.log(
        `  ${variant.padEnd(20)} ${flagged} flagged  Postgres ${median(pg).toFixed(1)} ms, paired ${paired(pg, first.pg)}` +
          `  worker ${median(worker).toFixed(1)} ms  both ${median(total).toFixed(1)} ms, paired ${paired(total, firstTotal)}`,
      );
    }
  }
} finally {
  await database.close();
  await dropDatabase(URL);
}
