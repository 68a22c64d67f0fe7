import {
  PolicyError,
  mergePolicyInputs,
  resolveModelInfo,
  resolvePolicy,
  type ModelInfo,
  type PolicyInput,
} from '@compactor/core';
import {
  deleteSession,
  findSession,
  insertSession,
  updateSession,
  type Db,
  type SessionPatch,
  type SessionRow,
  contentHash,
} from '@compactor/db';
import { ApiError, invalid, notFound } from '../http/errors';
import type { ApiResources } from '../resources';
import type { TenantLimits } from './tenant-limits';
import type { z } from 'zod';
import { modelLimitsIssues, type CreateSessionInput, type PatchSessionBody } from '@compactor/contract';
import { newId } from '@compactor/db';

/** Resolves a policy input now, so a bad one is a 400 at write time rather than a failure later. */
function checkedPolicy(input: PolicyInput): PolicyInput {
  try {
    resolvePolicy(input);
    return input;
  } catch (error) {
    if (error instanceof PolicyError) throw invalid(error.message);
    throw error;
  }
}

/**
 * The model with its limits checked as the session will have them (stated values completed from
 * the catalog or the stored model): inconsistent limits are a 400 naming the field.
 */
function checkedModel(model: ModelInfo): ModelInfo {
  const issues = modelLimitsIssues(model).map(({ path, message }) => ({
    path: `body.model.${path}`,
    message,
  }));
  if (issues.length > 0) {
    throw invalid(`invalid request: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues });
  }
  return model;
}

/**
 * Creates a session, idempotently by client id: the same id with the same body returns the
 * stored session (`created: false`); with a different body it is a conflict.
 */
export async function createSession(
  db: Db,
  tenantId: string,
  body: CreateSessionInput,
): Promise<{ session: SessionRow; created: boolean }> {
  const model = checkedModel(resolveModelInfo(body.model));
  const policy = checkedPolicy((body.policy ?? {}) as PolicyInput);
  const createHash = contentHash(body);
  const id = body.id ?? newId('ses');
  const inserted = await insertSession(db, {
    tenantId,
    id,
    modelId: model.id,
    provider: model.provider,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxOutputTokens,
    inputLimit: model.inputLimit,
    policy,
    metadata: body.metadata ?? {},
    createHash,
  });
  if (inserted) return { session: inserted, created: true };
  const existing = await findSession(db, tenantId, id);
  if (!existing) throw new ApiError(409, 'conflict', 'session id was taken and released concurrently; retry');
  if (existing.createHash !== createHash) {
    throw new ApiError(409, 'conflict', `session ${id} already exists with a different body`);
  }
  return { session: existing, created: false };
}

/**
 * {@link createSession} under the tenant's session-creation rate: a new session spends it (a
 * 429 when it is spent), the same id again never does.
 */
export function createSessionWithinRate(
  db: Db,
  limits: TenantLimits,
  tenantId: string,
  body: CreateSessionInput,
): Promise<{ session: SessionRow; created: boolean }> {
  const { id } = body;
  return limits.createSession(
    tenantId,
    () => createSession(db, tenantId, body),
    async () => id !== undefined && (await findSession(db, tenantId, id)) !== null,
  );
}

export async function requireSession(db: Db, tenantId: string, id: string): Promise<SessionRow> {
  const session = await findSession(db, tenantId, id);
  if (!session) throw notFound('session');
  return session;
}

/**
 * PATCH semantics: model fields merge into the stored model, policy overrides deep-merge into
 * the stored ones (and must still resolve), metadata merges with `null` removing a key.
 */
export async function patchSession(
  db: Db,
  session: SessionRow,
  body: z.infer<typeof PatchSessionBody>,
): Promise<SessionRow> {
  const patch: SessionPatch = {};
  if (body.model) {
    // A new model id takes its limits from the catalog unless stated; the same model keeps the
    // stored ones (bounded by a new, smaller window).
    const model = checkedModel(
      resolveModelInfo(
        {
          id: body.model.id ?? session.modelId,
          provider: body.model.provider ?? session.provider,
          contextWindow: body.model.contextWindow,
          maxOutputTokens: body.model.maxOutputTokens,
          inputLimit: body.model.inputLimit,
        },
        body.model.id
          ? {}
          : {
              contextWindow: session.contextWindow,
              maxOutputTokens: session.maxOutputTokens,
              inputLimit: session.inputLimit,
            },
      ),
    );
    Object.assign(patch, {
      modelId: model.id,
      provider: model.provider,
      contextWindow: model.contextWindow,
      maxOutputTokens: model.maxOutputTokens,
      inputLimit: model.inputLimit,
    });
  }
  if (body.policy) {
    patch.policy = checkedPolicy(
      mergePolicyInputs(session.policy as PolicyInput, body.policy as PolicyInput),
    );
  }
  if (body.metadata) {
    const merged: Record<string, unknown> = { ...(session.metadata as Record<string, unknown>) };
    for (const [key, value] of Object.entries(body.metadata)) {
      if (value === null) delete merged[key];
      else merged[key] = value;
    }
    patch.metadata = merged;
  }
  const updated = await updateSession(db, session.pk, patch);
  if (!updated) throw notFound('session');
  return updated;
}

/** Deletes the session, then ends its event streams (`session.deleted`). */
export async function removeSession(resources: ApiResources, session: SessionRow): Promise<void> {
  if (!(await deleteSession(resources.db, session.pk))) throw notFound('session');
  await resources.jobs.sessionDeleted(session);
}
