import { resolveModelInfo, type PolicyInput } from '@compactor/core';
import { insertSession, newId, type Db, type SessionRow } from '@compactor/db';

/**
 * A session row (no messages yet) inserted exactly as the API inserts one, for the stub
 * summarizer model with this context window (default 32,000 tokens).
 */
export async function insertTestSession(
  db: Db,
  options: { tenantId: string; policy?: PolicyInput; contextWindow?: number },
): Promise<SessionRow> {
  const model = resolveModelInfo({
    id: 'stub-summarizer',
    provider: 'stub',
    contextWindow: options.contextWindow ?? 32_000,
    maxOutputTokens: 4_000,
  });
  const session = await insertSession(db, {
    tenantId: options.tenantId,
    id: newId('ses'),
    modelId: model.id,
    provider: model.provider,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxOutputTokens,
    inputLimit: model.inputLimit,
    policy: options.policy ?? {},
    createHash: 'test',
  });
  if (!session) throw new Error('session insert failed');
  return session;
}
