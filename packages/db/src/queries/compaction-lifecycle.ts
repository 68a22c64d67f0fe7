import { and, eq, inArray, sql } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import type { CompactionRow } from '../mappers';
import { compactions, compactionSteps, sessions } from '../schema';

/**
 * Starts (or restarts) an attempt: `running`, attempts + 1, a new fence, and, on the first
 * attempt only, the range it covers fixed at the session's current last seq, so messages
 * appended meanwhile land after the boundary. Returns null when the compaction is no longer
 * active (finished, or gone).
 */
export async function claimCompaction(db: DbOrTx, id: string, now: Date): Promise<CompactionRow | null> {
  const [row] = await db
    .update(compactions)
    .set({
      status: 'running',
      attempts: sql`${compactions.attempts} + 1`,
      fence: sql`${compactions.fence} + 1`,
      startedAt: sql`coalesce(${compactions.startedAt}, ${now})`,
      progressAt: sql`now()`,
      coversThroughSeq: sql`coalesce(${compactions.coversThroughSeq}, (select ${sessions.lastSeq} from ${sessions} where ${sessions.pk} = ${compactions.sessionPk}))`,
      errorCode: null,
      errorMessage: null,
    })
    .where(and(eq(compactions.id, id), inArray(compactions.status, ['pending', 'running'])))
    .returning();
  return row ?? null;
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
