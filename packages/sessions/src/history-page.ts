import { loadHistoryPage, resolveMediaReferences, type Db } from '@compactor/db';
import type { HistoryPageAnswer } from './answers';
import { requireSession, type SessionTarget } from './sessions';

/** `GET /v1/sessions/:id/messages`: a page of the raw history. */
export async function historyPage(
  db: Db,
  target: SessionTarget,
  query: Parameters<typeof loadHistoryPage>[2],
): Promise<HistoryPageAnswer> {
  const session = await requireSession(db, target.tenantId, target.id);
  const page = await loadHistoryPage(db, session.pk, query);
  return { ...page, messages: await resolveMediaReferences(db, target.tenantId, page.messages) };
}
