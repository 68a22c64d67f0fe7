import {
  PolicyError,
  mergePolicyInputs,
  resolveModelInfo,
  resolvePolicy,
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
import type { z } from 'zod';
import type { CreateSessionInput, PatchSessionBody } from '@compactor/contract';
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
 * Creates a session, idempotently by client id: the same id with the same body returns the
 * stored session (`created: false`); with a different body it is a conflict.
 */
export async function createSession(
  db: Db,
  tenantId: string,
  body: CreateSessionInput,
): Promise<{ session: SessionRow; created: boolean }> {
  const model = resolveModelInfo(body.model);
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
    const model = resolveModelInfo({
      id: body.model.id ?? session.modelId,
      provider: body.model.provider ?? session.provider,
      contextWindow: body.model.contextWindow ?? (body.model.id ? undefined : session.contextWindow),
      maxOutputTokens: body.model.maxOutputTokens ?? (body.model.id ? undefined : session.maxOutputTokens),
      inputLimit:
        body.model.inputLimit !== undefined
          ? body.model.inputLimit
          : body.model.id
            ? undefined
            : session.inputLimit,
    });
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

export async function removeSession(db: Db, session: SessionRow): Promise<void> {
  if (!(await deleteSession(db, session.pk))) throw notFound('session');
}
