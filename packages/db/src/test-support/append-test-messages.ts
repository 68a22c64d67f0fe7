/**
 * Seeding a session's messages in tests and fixtures through the API's own append, so what a test
 * stores went through the statement production runs. No test framework here: the package index
 * re-exports it as well as `@compactor/db/testing`.
 */
import type { Db } from '../client';
import { NotFoundError } from '../errors';
import { appendToSession, type AppendedMessage } from '../operations/append-messages';
import type { NewMessage } from '../operations/new-message';
import { findSessionByPk } from '../queries/sessions';

/**
 * Appends a batch to the session of `sessionPk` with `appendToSession`, the API's append: the
 * session's client ids and model are read first, as the API knows them from the request and its
 * last append. Throws NotFoundError when there is no such session (the API's 404), and returns
 * where each message landed, in batch order.
 */
export async function appendTestMessages(
  db: Db,
  sessionPk: number,
  batch: NewMessage[],
): Promise<AppendedMessage[]> {
  const session = await findSessionByPk(db, sessionPk);
  if (!session) throw new NotFoundError('session not found');
  const target = { tenantId: session.tenantId, id: session.id, modelId: session.modelId };
  const outcome = await appendToSession(db, target, batch);
  if (outcome.kind === 'missing') throw new NotFoundError('session not found');
  // A batch given as messages is always decided; only a model changed in between writes nothing.
  if (outcome.kind !== 'appended')
    throw new Error(`append to ${session.id}: ${outcome.kind}, nothing written`);
  return outcome.appended;
}
