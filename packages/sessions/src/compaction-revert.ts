import { revertCompaction as revertStoredCompaction, NotFoundError } from '@compactor/db';
import type { RevertCompactionResponse } from '@compactor/contract';
import { CompactionNotFound } from './errors';
import type { SessionResources } from './resources';
import { requireSession } from './sessions';
import { sessionStatus } from './status';
import { compactionView } from './views';

/**
 * `POST /v1/compactions/:id/revert`: undoes the session's latest completed compaction (db
 * `revertCompaction`: one transaction; its `ConflictError` with `details.reason` when it is not the
 * latest completed one, another compaction of the session is pending or running, or the purge
 * cleared what the restored view would show; another tenant's compaction is {@link CompactionNotFound}). Announces
 * `compaction.reverted` once committed and answers the compaction as reverted with the session's
 * status, read after the commit: the restored view, plus whatever was appended meanwhile.
 *
 * The auto trigger then treats the revert as it treats a failed compaction (the status's last
 * finished compaction is not `completed`): below the usable window it holds until the session
 * has grown by a quarter of its threshold since the reverted compaction measured it, so a revert
 * is not undone by the next append; over the usable window it compacts again at once.
 */
export async function revertCompaction(
  resources: SessionResources,
  tenantId: string,
  compactionId: string,
): Promise<RevertCompactionResponse> {
  const reverted = await revertStoredCompaction(resources.db, {
    tenantId,
    compactionId,
    at: resources.clock(),
  }).catch((error: unknown) => {
    throw error instanceof NotFoundError ? new CompactionNotFound() : error;
  });
  const session = await requireSession(resources.db, tenantId, reverted.session.id);
  const status = await sessionStatus(resources.db, session);
  await resources.jobs.compactionReverted(session, reverted.compaction, {
    restoredCompactionId: reverted.restored?.id ?? null,
    tokens: status.tokens,
    contextMessages: status.contextMessages,
  });
  return { compaction: compactionView(reverted.compaction, session.id), status };
}
