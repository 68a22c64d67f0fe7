/**
 * The sessions drop-in requests create: the header's id, else one derived from the request's
 * chain, so that two processes creating the session of the same request create one.
 */
import { createHash } from 'node:crypto';
import type { PolicyInput } from '@compactor/core';
import { findSession, type SessionRow } from '@compactor/db';
import { Conflict, createSession } from '@compactor/sessions';
import type { GatewayDeps } from './conversation-types';

/** What a drop-in session keeps in its metadata, under `dropin`. */
export interface DropInMetadata {
  protocol: 'openai' | 'anthropic';
  /** Offer the recall tool upstream (`X-Compactor-Recall: false` at creation turns it off). */
  recall: boolean;
  /** The `X-Compactor-Session` the conversation started under; its forks keep it. */
  conversationKey: string | null;
  /** The session whose history the request's diverged from, for a fork. */
  divergedFrom?: string;
}

export interface NewDropInSession {
  tenantId: string;
  /** The header's id, or null for one derived from the chain. */
  id: string | null;
  model: {
    id: string;
    provider: string;
    contextWindow?: number;
    maxOutputTokens?: number;
    inputLimit?: number | null;
  };
  policy?: PolicyInput;
  metadata: DropInMetadata;
  /** The chain hash of the request's last element (hex). */
  chainEnd: string;
}

/** The `dropin` metadata of a session, with the defaults of a session the API created. */
export function dropInMetadataOf(session: SessionRow, protocol: DropInMetadata['protocol']): DropInMetadata {
  const stored = (session.metadata as { dropin?: Partial<DropInMetadata> }).dropin ?? {};
  return {
    protocol: stored.protocol ?? protocol,
    recall: stored.recall ?? true,
    conversationKey: stored.conversationKey ?? null,
    ...(stored.divergedFrom !== undefined ? { divergedFrom: stored.divergedFrom } : {}),
  };
}

/**
 * Creates the session within the tenant's creation rate. A derived id is the same for the same
 * request under the same key and fork, so a concurrent twin finds the session created (the same
 * body is idempotent); should it be taken by another body, a generated id is used instead.
 */
export async function createDropInSession(deps: GatewayDeps, input: NewDropInSession): Promise<SessionRow> {
  const id = input.id ?? derivedSessionId(input);
  try {
    return await create(deps, input, id);
  } catch (error) {
    if (!(error instanceof Conflict)) throw error;
    // The header's session, created meanwhile by a request with other overrides: it is the one.
    if (input.id !== null) {
      const existing = await findSession(deps.resources.db, input.tenantId, input.id);
      if (existing) return existing;
      throw error;
    }
    return create(deps, input, undefined);
  }
}

async function create(
  deps: GatewayDeps,
  input: NewDropInSession,
  id: string | undefined,
): Promise<SessionRow> {
  const { db } = deps.resources;
  const body = {
    ...(id !== undefined ? { id } : {}),
    model: input.model,
    ...(input.policy !== undefined ? { policy: input.policy } : {}),
    metadata: { dropin: input.metadata },
  };
  const { session } = await deps.limits.createSession(
    input.tenantId,
    () => createSession(db, input.tenantId, body),
    async () => id !== undefined && (await findSession(db, input.tenantId, id)) !== null,
  );
  return session;
}

function derivedSessionId(input: NewDropInSession): string {
  const digest = createHash('sha256')
    .update(
      JSON.stringify([input.metadata.conversationKey, input.metadata.divergedFrom ?? null, input.chainEnd]),
    )
    .digest('hex');
  return `ses_dropin_${digest.slice(0, 32)}`;
}
