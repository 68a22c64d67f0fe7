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
import { Conflict, InvalidInput, SessionNotFound } from './errors';
import { resolveStoredPolicy } from '@compactor/workflow';
import {
  modelLimitsIssues,
  type CreateSessionInput,
  type PatchSessionBody,
  type Session,
} from '@compactor/contract';
import type { z } from 'zod';
import { newId, sessionCacheModel, sessionModel } from '@compactor/db';
import type { SessionResources } from './resources';
import { sessionStatus } from './status';
import type { TenantLimits } from './tenant-limits';
import type { SessionTarget } from './session-target';
import { taskCounts } from './tasks';

export type { SessionTarget } from './session-target';

/** Resolves a policy input now, so a bad one is refused at write time rather than failing later. */
function checkedPolicy(input: PolicyInput): PolicyInput {
  try {
    resolvePolicy(input);
    return input;
  } catch (error) {
    if (error instanceof PolicyError) throw new InvalidInput(error.message);
    throw error;
  }
}

/**
 * The model with its limits checked as the session will have them (stated values completed from
 * the catalog or the stored model): inconsistent limits are refused, naming the field.
 */
function checkedModel(model: ModelInfo): ModelInfo {
  const issues = modelLimitsIssues(model).map(({ path, message }) => ({
    path: `body.model.${path}`,
    message,
  }));
  if (issues.length > 0) throw InvalidInput.ofIssues(issues);
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
    modelPricing: body.model.pricing ?? null,
    modelCache: body.model.cache ?? null,
    policy,
    metadata: body.metadata ?? {},
    createHash,
  });
  if (inserted) return { session: inserted, created: true };
  const existing = await findSession(db, tenantId, id);
  if (!existing)
    throw new Conflict('session_id_released', 'session id was taken and released concurrently; retry');
  if (existing.createHash !== createHash) {
    throw new Conflict('session_exists', `session ${id} already exists with a different body`);
  }
  return { session: existing, created: false };
}

/**
 * `POST /v1/sessions`: {@link createSession} under the tenant's session-creation rate: a new
 * session spends it (refused with `TenantLimitReached` when it is spent), the same id again never does.
 */
export async function createSessionWithinRate(
  db: Db,
  limits: TenantLimits,
  tenantId: string,
  body: CreateSessionInput,
): Promise<{ session: Session; created: boolean }> {
  const { id } = body;
  const { session, created } = await limits.createSession(
    tenantId,
    () => createSession(db, tenantId, body),
    async () => id !== undefined && (await findSession(db, tenantId, id)) !== null,
  );
  return { session: await sessionView(db, session), created };
}

/** A session in the API's shape, with its live status. */
export async function sessionView(db: Db, session: SessionRow): Promise<Session> {
  return {
    id: session.id,
    model: { ...sessionModel(session), ...sessionCacheModel(session) },
    policy: session.policy as Record<string, unknown>,
    effectivePolicy: resolveStoredPolicy(session.policy as PolicyInput) as unknown as Record<string, unknown>,
    metadata: session.metadata as Record<string, unknown>,
    createdAt: session.createdAt.toISOString(),
    updatedAt: session.updatedAt.toISOString(),
    status: await sessionStatus(db, session),
  };
}

/** `GET /v1/sessions/:id`: the session with its live status. */
export async function getSession(db: Db, target: SessionTarget): Promise<Session> {
  const session = await requireSession(db, target.tenantId, target.id);
  const view = await sessionView(db, session);
  return { ...view, tasks: await taskCounts(db, session.pk) };
}

/** The session the client names, or {@link SessionNotFound}. */
export async function requireSession(db: Db, tenantId: string, id: string): Promise<SessionRow> {
  const session = await findSession(db, tenantId, id);
  if (!session) throw new SessionNotFound();
  return session;
}

/**
 * `PATCH /v1/sessions/:id`: model fields merge into the stored model, policy overrides
 * deep-merge into the stored ones (and must still resolve), metadata merges with `null`
 * removing a key. Answers the session as changed.
 */
export async function patchSession(
  db: Db,
  target: SessionTarget,
  body: z.infer<typeof PatchSessionBody>,
): Promise<Session> {
  const session = await requireSession(db, target.tenantId, target.id);
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
    // Cache overrides belong to a model: another model id drops them unless stated; null clears.
    const otherModel = body.model.id !== undefined && body.model.id !== session.modelId;
    if (body.model.pricing !== undefined || otherModel) patch.modelPricing = body.model.pricing ?? null;
    if (body.model.cache !== undefined || otherModel) patch.modelCache = body.model.cache ?? null;
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
  if (!updated) throw new SessionNotFound();
  return sessionView(db, updated);
}

/** `DELETE /v1/sessions/:id`: deletes the session, then ends its event streams (`session.deleted`). */
export async function removeSession(resources: SessionResources, target: SessionTarget): Promise<void> {
  const session = await requireSession(resources.db, target.tenantId, target.id);
  if (!(await deleteSession(resources.db, session.pk))) throw new SessionNotFound();
  await resources.jobs.sessionDeleted(session);
}
