import type { CompactionStep } from '@compactor/core';
import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { CompactionRow, SessionRow } from '../mappers';
import { compactions, compactionSteps, sessions } from '../schema';
import { rowMapper, selectList } from './raw-rows';
import { executePrepared } from '../prepared';
import { contextTokenStatsSql, statsFromRow, type ContextTokenStats } from './context-tokens';

/** A claimed attempt: the compaction row (new fence) and the session it compacts. */
export interface ClaimedCompaction {
  compaction: CompactionRow;
  session: SessionRow;
  /**
   * The session's latest completed compaction (the view's boundary), or null. It stays current
   * for the attempt: only an active compaction completes, and this is the session's only one.
   */
  latestCompleted: CompactionRow | null;
  /** The context view's stats as the claim saw it, when asked for (see {@link claimCompaction}). */
  stats?: ContextTokenStats;
}

const claimedCompactionRow = rowMapper(compactions, 'c_');
const claimedSessionRow = rowMapper(sessions, 's_');
const latestCompletedRow = rowMapper(compactions, 'l_');

/**
 * Starts (or restarts) an attempt: `running`, attempts + 1, a new fence, and, on the first
 * attempt only, the range it covers fixed at the session's current last seq, so messages
 * appended meanwhile land after the boundary. Returns the row with its session (one round
 * trip) and its latest completed compaction, or null when the compaction is no longer active
 * (finished, or gone).
 *
 * With `stats`, the same statement also measures the session's context view (core's estimate
 * inputs, as {@link contextTokenStats} reads them with that `pinSystemMessages`): the size a
 * first attempt records before it changes anything, without a round trip of its own. The row
 * being claimed is not `completed`, so it does not move the view it measures.
 */
export async function claimCompaction(
  db: DbOrTx,
  id: string,
  now: Date,
  options: { stats?: { pinSystemMessages: boolean } } = {},
): Promise<ClaimedCompaction | null> {
  const stats = options.stats
    ? {
        cte: sql`, st as materialized (${contextTokenStatsSql(
          sql`(select session_pk from claimed)`,
          options.stats.pinSystemMessages,
        )})`,
        columns: sql`, st.*`,
        join: sql` cross join st`,
      }
    : { cte: sql``, columns: sql``, join: sql`` };
  const result = await executePrepared<Record<string, unknown>>(
    db,
    sql`
    with claimed as (
      update compactions c
      set status = 'running',
          attempts = c.attempts + 1,
          fence = c.fence + 1,
          started_at = coalesce(c.started_at, ${now}),
          progress_at = now(),
          covers_through_seq = coalesce(c.covers_through_seq,
                                        (select s.last_seq from sessions s where s.pk = c.session_pk)),
          error_code = null,
          error_message = null
      where c.id = ${id} and c.status in ('pending', 'running')
      returning c.*
    )${stats.cte}
    select ${selectList(compactions, 'claimed', 'c_')}, ${selectList(sessions, 's', 's_')},
           ${selectList(compactions, 'l', 'l_')}${stats.columns}
    from claimed join sessions s on s.pk = claimed.session_pk
    left join lateral (
      select * from compactions l
      where l.session_pk = claimed.session_pk and l.status = 'completed'
      order by l.finished_at desc, l.requested_at desc limit 1
    ) l on true${stats.join}`,
  );
  const [raw] = result.rows;
  if (!raw) return null;
  return {
    compaction: claimedCompactionRow(raw),
    session: claimedSessionRow(raw),
    latestCompleted: raw.l_id === null ? null : latestCompletedRow(raw),
    ...(options.stats ? { stats: statsFromRow(raw) } : {}),
  };
}

/** Fenced columns a step change may write with it. */
export interface StepPatch {
  tokensBefore?: number;
  messagesBefore?: number;
  prunedParts?: number;
  prunedTokens?: number;
  /** Stored as jsonb. */
  summaryDraft?: unknown;
}

const STEP_PATCH_COLUMNS: Record<keyof StepPatch, string> = {
  tokensBefore: 'tokens_before',
  messagesBefore: 'messages_before',
  prunedParts: 'pruned_parts',
  prunedTokens: 'pruned_tokens',
  summaryDraft: 'summary_draft',
};

/**
 * Moves a running attempt into `step` in ONE statement: closes the previous step's record as
 * completed (`finish`), records a step that needed no statement of its own (`passed`), sets the
 * row's `step` (and `patch`) fenced, and opens the new step's record. Returns the new record's pk, or null when the fence moved (a newer attempt owns the
 * row: nothing fenced was written, and no record was opened).
 */
export async function enterStep(
  db: DbOrTx,
  entry: {
    compactionId: string;
    fence: number;
    attempt: number;
    step: CompactionStep;
    at: Date;
    patch?: StepPatch;
    finish?: { pk: number; detail: Record<string, unknown> };
    /**
     * A step that needed no statement of its own (a prune with nothing to select), recorded as
     * completed with its detail before the new step's record (it gets the lower pk), from
     * `startedAt` (when the attempt began deciding it) to `at`.
     */
    passed?: { step: CompactionStep; detail: Record<string, unknown>; startedAt: Date };
  },
): Promise<number | null> {
  const sets = [sql`step = ${entry.step}`, sql`progress_at = now()`];
  // The summarize step reads the view after this statement: a covered message changed before it
  // (queries/covered-changes.ts, whose lock this update waits for) is in what it reads.
  if (entry.step === 'summarize') sets.push(sql`changed_seq = null`);
  for (const [key, value] of Object.entries(entry.patch ?? {}) as Array<[keyof StepPatch, unknown]>) {
    if (value === undefined) continue;
    const column = sql.raw(STEP_PATCH_COLUMNS[key]);
    sets.push(
      key === 'summaryDraft' ? sql`${column} = ${JSON.stringify(value)}::jsonb` : sql`${column} = ${value}`,
    );
  }
  const finish = entry.finish
    ? sql`finished as (
        update compaction_steps
        set status = 'completed', detail = ${JSON.stringify(entry.finish.detail)}::jsonb,
            error_message = null, finished_at = ${entry.at}
        where pk = ${entry.finish.pk}
      ),`
    : sql``;
  // The new record's insert reads the passed one's RETURNING row, so the passed record is
  // written (and numbered) first.
  const passed = entry.passed
    ? {
        cte: sql`, passed as (
          insert into compaction_steps (compaction_id, step, attempt, status, detail, started_at, finished_at)
          select id, ${entry.passed.step}, ${entry.attempt}, 'completed',
                 ${JSON.stringify(entry.passed.detail)}::jsonb, ${entry.passed.startedAt}, ${entry.at}
          from fenced
          returning compaction_id as id
        )`,
        from: sql`passed`,
      }
    : { cte: sql``, from: sql`fenced` };
  const result = await executePrepared<{ pk: string | number }>(
    db,
    sql`
    with ${finish} fenced as (
      update compactions set ${sql.join(sets, sql`, `)}
      where id = ${entry.compactionId} and fence = ${entry.fence} and status = 'running'
      returning id
    )${passed.cte}
    insert into compaction_steps (compaction_id, step, attempt, status, started_at)
    select id, ${entry.step}, ${entry.attempt}, 'running', ${entry.at}
    from ${passed.from}
    returning pk`,
  );
  const [row] = result.rows;
  return row ? Number(row.pk) : null;
}

/**
 * Updates a running compaction only if `fence` is still the current attempt's: a stalled worker
 * that wakes up after another took over writes nothing. Returns whether it wrote.
 */
export async function updateRunningCompaction(
  db: DbOrTx,
  id: string,
  fence: number,
  patch: Partial<typeof compactions.$inferInsert>,
): Promise<CompactionRow | null> {
  const [row] = await db
    .update(compactions)
    // Every fenced write is also the attempt's heartbeat: the reconciler re-drives silent ones.
    .set({ ...patch, progressAt: sql`now()` })
    .where(and(eq(compactions.id, id), eq(compactions.fence, fence), eq(compactions.status, 'running')))
    .returning();
  return row ?? null;
}

/** Records a step of an attempt (a `compaction_steps` row); unfenced, so fence the compaction row first. */
export async function insertCompactionStep(
  db: DbOrTx,
  row: typeof compactionSteps.$inferInsert,
): Promise<{ pk: number }> {
  const [inserted] = await db.insert(compactionSteps).values(row).returning({ pk: compactionSteps.pk });
  if (!inserted) throw new Error('compaction step insert returned nothing');
  return inserted;
}

/** Closes a step record as `completed` or `failed` at `at`; `detail` is written only when given. */
export async function finishCompactionStep(
  db: DbOrTx,
  pk: number,
  outcome: {
    status: 'completed' | 'failed';
    detail?: Record<string, unknown>;
    errorMessage?: string | null;
    at: Date;
  },
): Promise<void> {
  await db
    .update(compactionSteps)
    .set({
      status: outcome.status,
      finishedAt: outcome.at,
      errorMessage: outcome.errorMessage ?? null,
      ...(outcome.detail ? { detail: outcome.detail } : {}),
    })
    .where(eq(compactionSteps.pk, pk));
}

/** The step records of a compaction, every attempt's, in the order they were written. */
export async function listCompactionSteps(db: DbOrTx, compactionId: string) {
  return db
    .select()
    .from(compactionSteps)
    .where(eq(compactionSteps.compactionId, compactionId))
    .orderBy(compactionSteps.pk);
}
