import { selectLatestLedger, type StoredLedger } from '@compactor/db';
import type { Attempt } from '../attempt';
import type { WorkflowResources } from '../resources';

const readByAttempt = new WeakMap<Attempt, Promise<StoredLedger | null>>();

/**
 * The ledger in force before this attempt's compaction (the latest completed compaction's), read
 * once per attempt: the fit step measures the block it renders and finalize merges the same one
 * into what it stores. A compaction runs alone in its session, so no other completes meanwhile
 * and the ledger read first is still the one in force at finalize.
 */
export function storedLedgerInForce(
  resources: WorkflowResources,
  attempt: Attempt,
): Promise<StoredLedger | null> {
  let ledger = readByAttempt.get(attempt);
  if (!ledger) {
    ledger = selectLatestLedger(resources.db, attempt.session.pk, attempt.compaction.id);
    readByAttempt.set(attempt, ledger);
    // A failed read is not kept: the next caller reads again.
    ledger.catch(() => readByAttempt.delete(attempt));
  }
  return ledger;
}
