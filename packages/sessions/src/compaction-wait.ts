import { findActiveCompaction, type Db } from '@compactor/db';
import type { SessionEventSource } from '@compactor/queue';

/**
 * How often the row is read while waiting, besides the wake-ups the session's events give: a
 * lost event (Redis down, a subscription not confirmed) costs at most this much.
 */
export const COMPACTION_WAIT_POLL_MS = 1_000;

/**
 * Waits, `waitMs` at most, until the session's compaction `compactionId` is no longer active
 * (completed, failed, skipped: its row says so). Wakes on each of the session's events and reads
 * the row then, and every {@link COMPACTION_WAIT_POLL_MS} besides; never throws for Redis (the
 * polls carry on without events). Resolves `true` when the compaction ended in time.
 */
export async function waitForCompactionEnd(
  resources: { db: Db; events: SessionEventSource },
  sessionPk: number,
  compactionId: string,
  waitMs: number,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  let wake: (() => void) | null = null;
  let woken: boolean;
  const unsubscribe = await subscribeInTime(
    resources.events,
    sessionPk,
    () => {
      woken = true;
      wake?.();
    },
    Math.min(waitMs, COMPACTION_WAIT_POLL_MS),
  );
  try {
    for (;;) {
      woken = false;
      const active = await findActiveCompaction(resources.db, sessionPk);
      if (active?.id !== compactionId) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      if (!woken) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, COMPACTION_WAIT_POLL_MS));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
    }
  } finally {
    unsubscribe?.();
  }
}

/**
 * The session's subscription, or `null` when Redis refuses or does not confirm within
 * `timeoutMs` (a late confirmation is undone at once): the wait then polls only.
 */
async function subscribeInTime(
  events: SessionEventSource,
  sessionPk: number,
  listener: () => void,
  timeoutMs: number,
): Promise<(() => void) | null> {
  let timedOut = false;
  const subscription = events.subscribe(sessionPk, listener).then(
    (unsubscribe) => {
      if (timedOut) unsubscribe();
      return unsubscribe;
    },
    () => null,
  );
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      resolve(null);
    }, timeoutMs);
  });
  try {
    return await Promise.race([subscription, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
