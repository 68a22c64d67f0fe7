import { DRAFT_JOB_LOST, endPreparedSummary, findPendingDraftsToCheck } from '@compactor/db';
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
 * writes the same way. Returns how many it retired.
 */
export async function retireDraftsWithoutJob(
  deps: Pick<DispatchDeps, 'db' | 'queues' | 'log'>,
  { olderThanMs, limit }: { olderThanMs: number; limit: number },
): Promise<number> {
  const queue = deps.queues.queue('prepare');
  let retired = 0;
  for (const draft of await findPendingDraftsToCheck(deps.db, { olderThanMs, limit })) {
    const job = await queue.getJob(draft.id);
    const state = job ? await job.getState() : 'missing';
    if (LIVE_JOB_STATES.has(state)) continue;
    if (await endPreparedSummary(deps.db, draft.sessionPk, draft.id, 'failed', DRAFT_JOB_LOST)) {
      deps.log.info(
        { draftId: draft.id, sessionPk: draft.sessionPk, jobState: state },
        'retired a draft whose job is gone',
      );
      retired++;
    }
  }
  return retired;
}
