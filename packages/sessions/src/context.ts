import { assembleContext, toOpenAIMessages, type PolicyInput } from '@compactor/core';
import { loadContextRows, type Db } from '@compactor/db';
import { resolveStoredPolicy } from '@compactor/workflow';
import type { ContextAnswer } from './answers';
import { requireSession, type SessionTarget } from './sessions';

/**
 * `GET /v1/sessions/:id/context`: what the model should see next. The filter (latest completed
 * compaction, its boundary) runs in SQL; core renders the result, natively or as a Chat
 * Completions array.
 */
export async function sessionContext(
  db: Db,
  target: SessionTarget,
  format: 'native' | 'openai',
): Promise<ContextAnswer> {
  const session = await requireSession(db, target.tenantId, target.id);
  const { pinSystemMessages } = resolveStoredPolicy(session.policy as PolicyInput);
  const rows = await loadContextRows(db, session.pk, { pinSystemMessages });
  const context = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : [], {
    pinSystemMessages,
  });
  return {
    messages: format === 'openai' ? toOpenAIMessages(context) : context.messages,
    compactionId: context.compactionId,
    boundarySeq: context.boundarySeq,
    tokens: context.tokens,
  };
}
