import {
  appendToSession,
  prepareMessages,
  type AppendedMessage,
  type NewMessage,
  type SessionRow,
} from '@compactor/db';
import type { AppendMessagesBody } from '@compactor/contract';
import type { z } from 'zod';
import { ApiError, notFound } from '../http/errors';
import type { ApiResources } from '../resources';
import { BoundedMap } from './bounded-map';

/** Sessions this process keeps the model of before it starts forgetting (emptied when full). */
const SESSION_MODELS_MAX = 10_000;

/**
 * The model each session had at its last append in this process ({@link sessionKey} → model id),
 * so the next append can count its batch without looking the session up first. Only a guess:
 * the append checks it under the session's lock, so another replica's change or a deleted and
 * re-created session costs a second count, never a wrong one.
 */
export class SessionModels extends BoundedMap<string, string> {
  constructor() {
    super(SESSION_MODELS_MAX);
  }
}

/** How many times an append counts again for a model that changed under it before giving up. */
const MODEL_CHANGES_TOLERATED = 2;

/**
 * Appends a batch counted for `target.modelId` to the session the client names, in one statement
 * that also finds the session and returns it as locked. When its model changed since (a PATCH,
 * from any replica), nothing was written: the batch is counted again with the session's model
 * and sent again.
 */
export async function appendCounted(
  resources: ApiResources,
  target: { tenantId: string; id: string; modelId: string },
  prepared: NewMessage[],
  {
    messages,
    models,
    key,
  }: { messages: z.infer<typeof AppendMessagesBody>['messages']; models: SessionModels; key: string },
): Promise<{ session: SessionRow; appended: AppendedMessage[] }> {
  let modelId = target.modelId;
  let batch = prepared;
  for (let attempt = 0; ; attempt++) {
    const outcome = await appendToSession(resources.db, { ...target, modelId }, batch);
    if (outcome.kind === 'missing') {
      models.delete(key);
      throw notFound('session');
    }
    models.set(key, outcome.session.modelId);
    if (outcome.kind === 'appended') return outcome;
    if (attempt >= MODEL_CHANGES_TOLERATED) {
      throw new ApiError(409, 'conflict', "the session's model kept changing during the append; retry");
    }
    modelId = outcome.session.modelId;
    batch = await prepareMessages(messages, resources.tokenizerFor(modelId), resources.clock());
  }
}
