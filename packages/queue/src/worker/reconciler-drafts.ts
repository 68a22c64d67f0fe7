import {
  DRAFT_JOB_LOST,
  failPreparedSummaries,
  findPendingDraftsToCheck,
  type DraftSweepPosition,
} from '@compactor/db';
import type { DispatchDeps } from '../jobs/dispatch';

/** BullMQ states in which a job will still run: its row needs nothing from the reconciler. */
export const LIVE_JOB_STATES: ReadonlySet<string> = new Set([
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
]);

/**
 * Where the next pass resumes its sweep of pending drafts, kept by the reconciler loop across
 * passes: a pass checks `limit` drafts after the last one the previous pass checked, and starts
 * over from the oldest once it reached the end. Old drafts whose jobs still wait are passed over
 * instead of filling every pass, so every pending draft is looked at within a few passes.
 */
export interface DraftSweepCursor {
  after: DraftSweepPosition | null;
}

/**
 * Retires pending drafts (policy `prepare`) that no live job will ever write: their job is gone
 * from Redis (it lost its data) or ended without ending the draft (BullMQ failed it after its
 * workers died mid-draft, past its stall count). Such a draft would stay `pending` for good, and
 * a pending draft blocks every new request on its boundary. It is marked `failed`
 * ({@link DRAFT_JOB_LOST}), which lets the prepare trigger request a fresh one on the same
 * boundary, with the headroom measured then, rather than re-driving a job whose request is old
 * and which no attempt count stops from crashing workers again. A compaction never needed it:
 * it waits only for a draft whose writer holds its lock.
 *
 * Only drafts requested more than `olderThanMs` ago are looked at: younger ones may still be on
 * their way into the queue, and by then a job whose worker died has been handed back or failed
 * by BullMQ's stall check. A job that writes the draft meanwhile wins: the retirement is fenced
 * by the draft's id and `pending` status, and a draft it retired is fenced out of its old job's
 * writes the same way. Without a cursor every pass starts from the oldest. Returns how many it
 * retired.
 */
export async function retireDraftsWithoutJob(
  deps: Pick<DispatchDeps, 'db' | 'queues' | 'log'>,
  { olderThanMs, limit, cursor }: { olderThanMs: number; limit: number; cursor?: DraftSweepCursor },
): Promise<number> {
  const queue = deps.queues.queue('prepare');
  const drafts = await findPendingDraftsToCheck(deps.db, {
    olderThanMs,
    limit,
    after: cursor?.after ?? null,
  });
  if (cursor) cursor.after = drafts.length < limit ? null : (drafts.at(-1)?.position ?? null);
  // Looked up concurrently, so the pass waits for Redis about once rather than once a draft;
  // `unknown` is a job Redis does not hold.
  const states = new Map(
    await Promise.all(drafts.map(async (draft) => [draft.id, await queue.getJobState(draft.id)] as const)),
  );
  const gone = drafts.filter((draft) => !LIVE_JOB_STATES.has(states.get(draft.id)!));
  const retired = await failPreparedSummaries(deps.db, gone, DRAFT_JOB_LOST);
  for (const draftId of retired) {
    deps.log.info({ draftId, jobState: states.get(draftId) }, 'retired a draft whose job is gone');
  }
  return retired.length;
}
