import type { RedisQueueBackend } from 'bullmq';

/** What the check reads of the prepare queue's worker: its Redis client and its key names. */
export interface PrepareQueueKeys {
  readonly backend: Pick<RedisQueueBackend, 'client'>;
  toKey(type: string): string;
}

/**
 * Whether a live worker holds the prepare job writing draft `draftId` (the job id is the draft's
 * id): its lock, which a running worker renews every half lock duration and a dead one's expires
 * one lock duration after its last renewal (`jobLockSettings`). That is the draft's lease: it is
 * the same lock, with the same duration, a compaction's job holds, and its expiry is what lets
 * the stall check hand the job to another worker. A compaction waiting for the draft stops
 * waiting once the lock is gone; the job that takes over then finds the compaction active and
 * gives the draft up. A Redis error answers "alive": the wait's own limit still bounds it.
 */
export function draftWriterAlive(prepare: PrepareQueueKeys): (draftId: string) => Promise<boolean> {
  return async (draftId) => {
    try {
      const client = await prepare.backend.client;
      return (await client.get(prepare.toKey(`${draftId}:lock`))) !== null;
    } catch {
      return true;
    }
  };
}
