import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '@compactor/core';
import type { Db } from '@compactor/db';
import type { SessionEvent } from '@compactor/workflow';
import { redisEventSource, type SessionEventSource } from '@compactor/queue';
import {
  TERMINAL,
  appendTo,
  compactionStates,
  expectContext,
  expectNoWorkerDiedOnItsOwn,
  followUp,
  prng,
  seedCodingSessions,
  sharedRedisUrl,
  startContextReader,
  summaryMessageCounts,
  useReliabilityRig,
  waitForTerminal,
} from './harness';

/**
 * Crash test: 50 compactions while three worker processes are SIGKILLed at random moments and
 * in every step (prune, summarize, finalize), then respawned. Every compaction must complete
 * exactly once, with exactly one summary message, no message lost, and the context view must
 * never show a half-applied compaction.
 */

const SESSIONS = 50;
const WORKERS = 3;
const ATTEMPTS = 8;
const BACKOFF_MS = 50;
const STEPS = ['prune', 'summarize', 'finalize'] as const;
/** Sessions a reader watches, and sessions that get messages appended while their compaction runs. */
const READ_SESSIONS = 8;
const APPEND_SESSIONS = 6;
/** Chaos stops once every step was hit and this many random single kills happened (or at the deadline). */
const MIN_RANDOM_KILLS = 6;
const CHAOS_MS = 45_000;

/**
 * One summary message per compaction (the `user` style writes exactly one), and a prune that
 * has something to prune in a 3–4 turn session.
 */
const POLICY: PolicyInput = {
  summaryMessage: 'user',
  pruning: { protectTokens: 1_000, minimumTokens: 1_000 },
};

let events: SessionEventSource | undefined;
const rig = useReliabilityRig({
  label: 'rel-crash',
  attempts: ATTEMPTS,
  backoffMs: BACKOFF_MS,
  workerEnv: { WORKER_CONCURRENCY: '3' },
  stub: { faults: { latencyMs: 300 } },
  setup: async ({ database, prefix }) => {
    await createSlowStepTriggers(database.db);
    events = redisEventSource(new Redis(sharedRedisUrl()), prefix);
  },
  teardown: async () => {
    await events?.close();
  },
});
const { database, fleet } = rig;

/**
 * Test-only slowness, in this file's database only, so that every step lasts long enough for
 * a kill to land inside it: the prune's INSERT into `part_prunes` (when it marks a part) and the
 * INSERT of summary messages inside finalize's transaction sleep 500 ms each (both are otherwise
 * far shorter than the LLM call: a kill must be able to land in them on a loaded CI machine).
 */
async function createSlowStepTriggers(db: Db): Promise<void> {
  await db.execute(
    sql.raw(`
      create function rel_slow_prune() returns trigger language plpgsql as $$
      begin
        if exists (select 1 from rel_new) then
          perform pg_sleep(0.5);
        end if;
        return null;
      end $$;
      create trigger rel_slow_prune after insert on part_prunes
        referencing new table as rel_new
        for each statement execute function rel_slow_prune();
      create function rel_slow_summary() returns trigger language plpgsql as $$
      begin
        perform pg_sleep(0.5);
        return null;
      end $$;
      create trigger rel_slow_summary after insert on messages
        for each row when (new.summary) execute function rel_slow_summary();
    `),
  );
}

/** Running compactions with their attempt (fence) and the step their row's `step` column names. */
async function runningRows(): Promise<Array<{ id: string; fence: number; step: string | null }>> {
  const result = await database.db.execute<{ id: string; fence: number; step: string | null }>(
    sql`select id, fence, step from compactions where status = 'running'`,
  );
  return result.rows;
}

function countSteps(rows: Array<{ step: string | null }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of rows) counts[r.step ?? '(between steps)'] = (counts[r.step ?? '(between steps)'] ?? 0) + 1;
  return counts;
}

/**
 * Steps in which an attempt died: its `compaction_steps` record is still `running` (a step that
 * returns or throws always closes its record) and the attempt is over — a later attempt claimed
 * the compaction, or no worker is alive (right after killing them all). An attempt whose
 * finalize committed before the kill is not counted: its compaction is completed and no later
 * attempt exists.
 */
async function stepsDiedIn(options: { noWorkerAlive: boolean }): Promise<Record<string, number>> {
  const result = await database.db.execute<{ step: string; n: number }>(sql`
    select cs.step, count(*)::int as n
    from compaction_steps cs join compactions c on c.id = cs.compaction_id
    where cs.status = 'running'
      and (cs.attempt < c.attempts
           or (${options.noWorkerAlive} and c.status in ('pending', 'running') and cs.attempt = c.attempts))
    group by cs.step
  `);
  return Object.fromEntries(result.rows.map((r) => [r.step, r.n]));
}

interface Kill {
  atMs: number;
  kind: 'all' | 'one';
  pids: number[];
  /** Steps of running compactions (step column) when the signal was sent. */
  running: Record<string, number>;
  /** For a kill of every worker: steps attempts have died in so far (this kill's and earlier kills'). */
  diedIn?: Record<string, number>;
}

describe('worker processes SIGKILLed in every step', () => {
  it(`completes ${SESSIONS} compactions exactly once, loses nothing, never shows a half-applied view`, async () => {
    const db = database.db;
    const seed = Number(process.env.REL_CHAOS_SEED ?? Date.now() % 1_000_000_007);
    const random = prng(seed);

    // 50 coding sessions of 3–4 turns.
    const sessions = await seedCodingSessions(db, SESSIONS, { firstSeed: 1, policy: POLICY });
    const seededIds = new Map<number, string[]>();
    for (const s of sessions) {
      const rows = await db.execute<{ id: string }>(
        sql`select id from messages where session_pk = ${s.pk} order by seq`,
      );
      seededIds.set(
        s.pk,
        rows.rows.map((r) => r.id),
      );
    }

    await fleet.spawnMany(WORKERS);
    const seen: SessionEvent[] = [];
    for (const s of sessions) await events!.subscribe(s.pk, (e) => seen.push(e));

    const requested = await rig.requestCompactions(sessions);
    expect(requested.every((r) => r.created)).toBe(true);
    const ids = requested.map((r) => r.compaction.id);
    const idOfSession = new Map(sessions.map((s, i) => [s.pk, ids[i]!]));

    // Jobs run roughly in request order: the last sessions stay uncompacted longest, so the reader
    // sees both sides of their switch and the appenders catch their compactions running.
    const watched = sessions.slice(-READ_SESSIONS);
    const reader = startContextReader(
      db,
      watched.map((s) => s.pk),
    );

    // Append a follow-up exchange to some sessions once their compaction runs (its covered range is fixed).
    const appended = new Map<number, { ids: string[]; whileRunning: boolean }>();
    // Settled promises: a failure is reported when awaited below, not as an unhandled rejection.
    const appenders = watched
      .slice(-APPEND_SESSIONS)
      .map(async (session, i) => {
        const compactionId = idOfSession.get(session.pk)!;
        const deadline = Date.now() + 90_000;
        while (Date.now() < deadline) {
          const [row] = await compactionStates(db, [compactionId]);
          const running = row?.status === 'running' && row.covers_through_seq !== null;
          if (running || TERMINAL.has(row?.status ?? '')) {
            const messages = followUp(`late${i}`);
            await appendTo(db, session, messages);
            appended.set(session.pk, { ids: messages.map((m) => m.id!), whileRunning: running });
            return;
          }
          await sleep(10);
        }
      })
      .map((p) =>
        p.then(
          () => null,
          (error: unknown) => error,
        ),
      );

    // The chaos loop.
    const started = Date.now();
    const kills: Kill[] = [];
    const hit = new Set<string>();
    /** `id:fence` of attempts a kill of every worker ended: their rows say `running` until a worker reclaims them. */
    const deadAttempts = new Set<string>();
    const respawning = new Set<Promise<void>>();
    const respawnErrors: string[] = [];
    const respawn = () => {
      const p = fleet
        .spawn()
        .then(
          () => undefined,
          (error: Error) => {
            // A worker killed by a kill-all while it started is replaced by that kill-all's respawn.
            if (!/exited before it was ready/.test(error.message)) respawnErrors.push(error.message);
          },
        )
        .finally(() => respawning.delete(p));
      respawning.add(p);
      return p;
    };
    let randomKills = 0;
    let nextRandomKill = Date.now() + 500 + random() * 1_000;
    let nextEvidence = 0;
    while (Date.now() - started < CHAOS_MS) {
      const active = await db.execute<{ n: number }>(
        sql`select count(*)::int as n from compactions where status in ('pending', 'running')`,
      );
      if (active.rows[0]!.n === 0) break;
      if (Date.now() >= nextEvidence) {
        // Random kills count too, once a later attempt reclaimed what they killed.
        for (const step of Object.keys(await stepsDiedIn({ noWorkerAlive: false }))) hit.add(step);
        nextEvidence = Date.now() + 500;
      }
      if (hit.size === STEPS.length && randomKills >= MIN_RANDOM_KILLS) break;
      const rows = await runningRows();
      const live = rows.filter((r) => !deadAttempts.has(`${r.id}:${r.fence}`));
      const unhit = STEPS.filter((step) => !hit.has(step) && live.some((r) => r.step === step));
      if (unhit.length > 0 && fleet.ready.length > 0) {
        // A step no kill has landed in yet is running: kill every worker at once, so the
        // attempt in that step surely dies in it. Not waiting for a full fleet: on a loaded
        // machine workers take 4–6 s to start, and a short step (finalize) can run and end on
        // the workers already back before the last one is.
        const victims = await fleet.killAll('SIGKILL');
        // Statements the server was running for them finish (autocommit) or roll back (in a transaction).
        await sleep(400);
        const diedIn = await stepsDiedIn({ noWorkerAlive: true });
        for (const step of Object.keys(diedIn)) hit.add(step);
        for (const r of await runningRows()) deadAttempts.add(`${r.id}:${r.fence}`);
        kills.push({
          atMs: Date.now() - started,
          kind: 'all',
          pids: victims.map((v) => v.pid),
          running: countSteps(rows),
          diedIn,
        });
        for (let i = fleet.alive.length; i < WORKERS; i++) void respawn();
        continue;
      }
      // Random single kills, while at least one other worker keeps working. They wait until
      // every step was hit (or a third of the chaos time went by): a random kill leaves the
      // fleet short of a worker for a respawn's seconds, and a kill of every worker waits for a
      // full fleet, so random kills first could let every compaction get past a short step (prune)
      // before a targeted kill lands in it, as on a loaded CI machine.
      const targetedDone = hit.size === STEPS.length || Date.now() - started > CHAOS_MS / 3;
      if (targetedDone && Date.now() >= nextRandomKill && fleet.ready.length >= 2) {
        const victim = fleet.ready[Math.floor(random() * fleet.ready.length)]!;
        await fleet.kill(victim, 'SIGKILL');
        kills.push({
          atMs: Date.now() - started,
          kind: 'one',
          pids: [victim.pid],
          running: countSteps(rows),
        });
        randomKills++;
        void respawn();
        nextRandomKill = Date.now() + 500 + random() * 1_000;
      }
      await sleep(20);
    }
    const chaosMs = Date.now() - started;
    await Promise.all([...respawning]);
    await Promise.all(Array.from({ length: Math.max(0, WORKERS - fleet.alive.length) }, respawn));
    expect(respawnErrors, 'workers that failed to start').toEqual([]);

    const rows = await waitForTerminal(db, ids, 45_000);
    expect(await Promise.all(appenders), 'appender failures').toEqual(appenders.map(() => null));
    await reader.stop();
    const totalMs = Date.now() - started;

    const diedIn = await stepsDiedIn({ noWorkerAlive: false });
    console.info(
      `crash test (seed ${seed}): ${kills.length} kills (${kills.filter((k) => k.kind === 'all').length} of all workers, ` +
        `${randomKills} random) in ${chaosMs} ms, all terminal after ${totalMs} ms; attempts died in ${JSON.stringify(diedIn)}; ` +
        `max claims ${Math.max(...rows.map((r) => r.attempts))}; reader ${JSON.stringify(reader.stats)}; ` +
        `worker startup ms ${fleet.all.map((h) => h.startupMs ?? '-').join(',')}\n` +
        kills
          .map(
            (k) =>
              `  ${k.atMs} ms kill ${k.kind} ${k.pids.join(',')} running=${JSON.stringify(k.running)}${k.diedIn ? ` diedIn=${JSON.stringify(k.diedIn)}` : ''}`,
          )
          .join('\n'),
    );

    // Kills landed in every step (attempts that died mid-step and were resumed by a later one).
    for (const step of STEPS) expect(diedIn[step] ?? 0, `an attempt killed in ${step}`).toBeGreaterThan(0);
    expect(kills.filter((k) => k.kind === 'one').length).toBeGreaterThanOrEqual(1);
    expectNoWorkerDiedOnItsOwn(fleet, 'workers that died without being killed');

    // Every compaction completed, by the LLM, once.
    for (const row of rows) {
      expect(row, row.id).toMatchObject({ status: 'completed', error_code: null });
      expect(row.finished_ms, row.id).toEqual(expect.any(Number));
      expect(row.details.writtenBy, row.id).toBe('llm');
      expect(row.summary_message_ids, row.id).toHaveLength(1);
    }
    const finalizeCompleted = await db.execute<{ compaction_id: string; n: number }>(sql`
      select compaction_id, count(*)::int as n from compaction_steps
      where step = 'finalize' and status = 'completed' group by compaction_id having count(*) > 1
    `);
    expect(finalizeCompleted.rows, 'compactions finalized more than once').toEqual([]);
    const completedEvents = new Map<string, number>();
    for (const e of seen) {
      if (e.type === 'compaction.completed')
        completedEvents.set(e.compactionId!, (completedEvents.get(e.compactionId!) ?? 0) + 1);
    }
    expect(
      [...completedEvents].filter(([, n]) => n > 1),
      'compactions announced completed twice',
    ).toEqual([]);

    // Exactly one summary message per compaction, and one compaction per session.
    const summaries = await summaryMessageCounts(db);
    for (const id of ids) expect(summaries.get(id)?.total ?? 0, `summary messages of ${id}`).toBe(1);
    expect(summaries.size).toBe(SESSIONS);
    const perSession = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from compactions group by session_pk having count(*) <> 1`,
    );
    expect(perSession.rows).toEqual([]);
    const active = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from compactions where status in ('pending', 'running')`,
    );
    expect(active.rows[0]!.n).toBe(0);

    // No message lost; the appended ones come after the boundary in the context view.
    expect(appended.size).toBe(APPEND_SESSIONS);
    expect(
      [...appended.values()].filter((a) => a.whileRunning).length,
      'appends while a compaction ran',
    ).toBeGreaterThanOrEqual(3);
    for (const session of sessions) {
      const stored = new Set(
        (
          await db.execute<{ id: string }>(sql`select id from messages where session_pk = ${session.pk}`)
        ).rows.map((r) => r.id),
      );
      const expectedIds = [...seededIds.get(session.pk)!, ...(appended.get(session.pk)?.ids ?? [])];
      expect(
        expectedIds.filter((id) => !stored.has(id)),
        `messages lost from ${session.id}`,
      ).toEqual([]);

      const view = await expectContext(db, session.pk, `context of ${session.id}`, {
        state: 'compacted',
        compactionId: idOfSession.get(session.pk),
      });
      const late = appended.get(session.pk)?.ids ?? [];
      if (late.length > 0) {
        const row = rows.find((r) => r.id === idOfSession.get(session.pk))!;
        const seqs = await db.execute<{ id: string; seq: number }>(
          sql`select id, seq from messages where session_pk = ${session.pk} and id = any(${sql.param(late)}::text[])`,
        );
        for (const m of seqs.rows) {
          expect(m.seq, `${m.id} after the covered range`).toBeGreaterThan(row.covers_through_seq!);
          expect(m.seq, `${m.id} after the boundary`).toBeGreaterThanOrEqual(row.boundary_seq!);
        }
        expect(view.ids.slice(-late.length), `${session.id} ends with the appended messages`).toEqual(late);
      }
    }

    // The reader saw both sides of the switch and never a half-applied view.
    expect(reader.problems).toEqual([]);
    expect(reader.stats.uncompacted).toBeGreaterThan(0);
    expect(reader.stats.compacted).toBeGreaterThan(0);

    // No job left to run in Redis.
    await expect
      .poll(
        async () =>
          rig.requester.queues.queue('compact').getJobCounts('waiting', 'active', 'delayed', 'prioritized'),
        {
          timeout: 10_000,
        },
      )
      .toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });
  }, 120_000);
});
