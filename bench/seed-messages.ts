import { appendToSession, type Db, type NewMessage, type SessionRow } from '@compactor/db';

/**
 * Appends a batch to a bench session as the API appends it (`appendToSession`), so a seeded
 * session holds what the service would have stored.
 */
export async function seedMessages(db: Db, session: SessionRow, batch: NewMessage[]): Promise<void> {
  const target = { tenantId: session.tenantId, id: session.id, modelId: session.modelId };
  const outcome = await appendToSession(db, target, batch);
  if (outcome.kind !== 'appended') throw new Error(`append to session ${session.id}: ${outcome.kind}`);
}
