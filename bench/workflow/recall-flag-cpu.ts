/**
 * The recall flag update's Postgres CPU, one compaction window, index spellings and summary
 * handling side by side on the same data: `npx tsx bench/workflow/recall-flag-cpu.ts`
 * (BENCH_DATABASE_URL, a scratch database created and dropped; BENCH_FLAG_ROUNDS, default 10;
 * BENCH_SUMMARY_CHARS, the previous summary's size, default 6,000).
 *
 * One session of the workflow bench's messages (`benchMessage`: 240 messages, 360 parts, ~231 KB
 * as a 300-message window of bench part 1a flags), the last one a previous compaction's summary.
 * Each measurement is one transaction, rolled back: the search index is dropped and built again
 * in the spelling measured (over unflagged parts: no words computed), then db
 * `markRecallableBehind` flags the window; its backend's CPU is read from `/proc/<pid>/schedstat`
 * around that call alone. Variants alternate within each round:
 *  - `translate`, summary flagged: migration 0016's words, and the summary flagged as before
 *    (its `summary` column cleared in the transaction, so the update takes it);
 *  - `translate`, summary left; `replace`, summary flagged; `replace`, summary left (migration 0029).
 * Then the window's parts read with and without the update's summary check (its own cost).
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { sql } from 'drizzle-orm';
import { createDatabase, markRecallableBehind } from '@compactor/db';
import { dropDatabase, freshDatabase } from '../processes';
import { benchMessage, seedSessions } from './sessions';

const URL =
  process.env.BENCH_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/compactor_bench_flag_${process.pid}`;
const ROUNDS = Number(process.env.BENCH_FLAG_ROUNDS ?? 10);
const SUMMARY_CHARS = Number(process.env.BENCH_SUMMARY_CHARS ?? 6_000);
const MESSAGES = 240;

/** Thrown to roll a measurement's transaction back. */
class RolledBack extends Error {}

const DOCUMENT = `left(coalesce("text", "tool_output", "tool_error", ''), 100000)`;
const SPELLINGS = {
  translate: `translate(${DOCUMENT}, '/.@:\\', '     ')`,
  replace: `replace(replace(replace(replace(replace(${DOCUMENT}, '/', ' '), '.', ' '), '@', ' '), ':', ' '), '\\', ' ')`,
} as const;

/** A summary of the shape the summarizer writes: sections of paths, identifiers and prose. */
function summaryText(chars: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < chars; i++) {
    lines.push(
      `- src/module${i}.ts: value${i} = compute(${i}) fixed; the failing test of module ${i} passes.`,
    );
  }
  return `## Summary\n${lines.join('\n')}`.slice(0, chars);
}

const cpuMs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

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
  const summary = benchMessage(MESSAGES - 1);
  await db.execute(sql`
    update messages set summary = true where session_pk = ${pk} and id = ${summary.id}`);
  await db.execute(sql`
    delete from parts where session_pk = ${pk} and seq = (select seq from messages where session_pk = ${pk} and id = ${summary.id}) and idx > 0`);
  await db.execute(sql`
    update parts set text = ${summaryText(SUMMARY_CHARS)}, type = 'text'
    where session_pk = ${pk} and seq = (select seq from messages where session_pk = ${pk} and id = ${summary.id})`);
  const { rows: sizes } = await db.execute<{ parts: number; chars: number; seqs: number }>(sql`
    select count(*)::int as parts, sum(length(coalesce(text, tool_output, tool_error, '')))::int as chars,
           max(seq) + 1 as seqs
    from parts where session_pk = ${pk}`);
  const { parts, chars, seqs } = sizes[0]!;
  const { rows: pids } = await db.execute<{ pid: number }>(sql`select pg_backend_pid() as pid`);
  const pid = pids[0]!.pid;

  const variants = Object.keys(SPELLINGS).flatMap((spelling) =>
    [true, false].map((summaryFlagged) => ({ spelling: spelling as keyof typeof SPELLINGS, summaryFlagged })),
  );
  const samples = new Map<string, number[]>();
  const flaggedBy = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
      const key = `${variant.spelling}, summary ${variant.summaryFlagged ? 'flagged' : 'left'}`;
      await db
        .transaction(async (tx) => {
          await tx.execute(sql.raw(`drop index parts_recall_search_idx`));
          await tx.execute(
            sql.raw(`create index parts_recall_search_idx on parts using gin (session_pk,
              to_tsvector('simple'::regconfig, ${SPELLINGS[variant.spelling]}))
              where recallable and type in ('text', 'reasoning', 'tool')`),
          );
          if (variant.summaryFlagged) {
            await tx.execute(sql`update messages set summary = false where session_pk = ${pk} and summary`);
          }
          const before = cpuMs(pid);
          const flagged = await markRecallableBehind(tx, pk, seqs, 500, 0);
          samples.set(key, [...(samples.get(key) ?? []), cpuMs(pid) - before]);
          flaggedBy.set(key, flagged);
          throw new RolledBack();
        })
        .catch((error: unknown) => {
          if (!(error instanceof RolledBack)) throw error;
        });
    }
  }
  // What the summary check adds to the update: the window's parts read with and without it.
  const check = { with: [] as number[], without: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [key, condition] of [
      [
        'with',
        sql`and q.seq <> all (array(select m.seq from messages m where m.session_pk = ${pk} and m.summary
                                      and m.seq >= 0 and m.seq < ${seqs}))`,
      ],
      ['without', sql``],
    ] as const) {
      const before = cpuMs(pid);
      await db.execute(sql`
        select count(*) from parts q where q.session_pk = ${pk} and q.seq >= 0 and q.seq < ${seqs}
          and q.type in ('text', 'reasoning', 'tool') ${condition}`);
      check[key].push(cpuMs(pid) - before);
    }
  }
  console.log(
    `the window's parts read: ${median(check.without).toFixed(2)} ms CPU, with the summary check ${median(check.with).toFixed(2)} ms`,
  );
  console.log(
    `window: ${seqs} messages, ${parts} parts, ${(chars / 1000).toFixed(0)} K characters (summary ${SUMMARY_CHARS}); ${ROUNDS} rounds`,
  );
  // The backend's CPU moves with the machine's load (another process on the core's sibling, the
  // clock): each variant against the first in the same round, where both met the same load.
  const first = samples.get(samples.keys().next().value!)!;
  for (const [key, values] of samples) {
    const paired = values.map((value, round) => value / first[round]!);
    console.log(
      `${key.padEnd(30)} ${flaggedBy.get(key)} flagged  CPU median ${median(values).toFixed(1)} ms  (min ${Math.min(...values).toFixed(1)}, max ${Math.max(...values).toFixed(1)})  paired ${median(paired).toFixed(3)}× (${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)})`,
    );
  }
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await database.close();
  await dropDatabase(URL);
}
