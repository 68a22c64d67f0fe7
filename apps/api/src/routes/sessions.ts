import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PolicyInput } from '@compactor/core';
import { resolveStoredPolicy } from '@compactor/workflow';
import { sessionModel, type SessionRow } from '@compactor/db';
import type { ApiResources } from '../resources';
import {
  MIN_CONTEXT_WINDOW,
  CreateSessionBody,
  ErrorBody,
  PatchSessionBody,
  SessionOut,
  SessionParams,
  type Session,
} from '@compactor/contract';
import { commonErrors } from '../http/route-errors';
import { createSessionWithinRate, patchSession, removeSession, requireSession } from '../services/sessions';
import type { TenantLimits } from '../services/tenant-limits';
import { sessionStatus } from '../services/status';

async function sessionView(resources: ApiResources, session: SessionRow): Promise<Session> {
  return {
    id: session.id,
    model: sessionModel(session),
    policy: session.policy as Record<string, unknown>,
    effectivePolicy: resolveStoredPolicy(session.policy as PolicyInput) as unknown as Record<string, unknown>,
    metadata: session.metadata as Record<string, unknown>,
    createdAt: session.createdAt.toISOString(),
    updatedAt: session.updatedAt.toISOString(),
    status: await sessionStatus(resources.db, session),
  };
}

export function sessionRoutes(
  resources: ApiResources,
  { limits }: { limits: TenantLimits },
): FastifyPluginAsyncZod {
  return async (app) => {
    const tags = ['sessions'];
    app.post(
      '/v1/sessions',
      {
        schema: {
          tags,
          summary: 'Create a session (201), or get it back: same id and body again (200)',
          description:
            'Session ids are 1–200 printable ASCII characters, never `.` or `..` (no URL could address them). ' +
            `The model's limits must hold together: \`contextWindow\` 0 (unlimited) or at least ${MIN_CONTEXT_WINDOW} tokens, ` +
            `\`maxOutputTokens\` at most the window, \`inputLimit\` from ${MIN_CONTEXT_WINDOW} to the window; ` +
            'limits left out come from the known-model table, fitted to a smaller window the request states. ' +
            'PATCH checks the model it leaves the same way. ' +
            'A tenant creating sessions faster than `TENANT_SESSION_CREATE_RATE` a minute (per API process) gets ' +
            '429 `too_many_requests` with `Retry-After`; the same id again (an existing session) is never refused.',
          body: CreateSessionBody,
          response: { 200: SessionOut, 201: SessionOut, ...commonErrors, 429: ErrorBody },
        },
      },
      async (request, reply) => {
        const { session, created } = await createSessionWithinRate(
          resources.db,
          limits,
          request.tenantId,
          request.body,
        );
        return reply.code(created ? 201 : 200).send(await sessionView(resources, session));
      },
    );

    app.get(
      '/v1/sessions/:id',
      {
        schema: {
          tags,
          summary: 'A session with its live status',
          params: SessionParams,
          response: { 200: SessionOut, ...commonErrors },
        },
      },
      async (request) =>
        sessionView(resources, await requireSession(resources.db, request.tenantId, request.params.id)),
    );

    app.patch(
      '/v1/sessions/:id',
      {
        schema: {
          tags,
          summary: 'Change the model, policy overrides or metadata of a session',
          params: SessionParams,
          body: PatchSessionBody,
          response: { 200: SessionOut, ...commonErrors },
        },
      },
      async (request) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        return sessionView(resources, await patchSession(resources.db, session, request.body));
      },
    );

    app.delete(
      '/v1/sessions/:id',
      {
        schema: {
          tags,
          summary: 'Delete a session and everything in it',
          description: 'Its open event streams, on every replica, receive `session.deleted` and end.',
          params: SessionParams,
          response: { 204: z.undefined(), ...commonErrors },
        },
      },
      async (request, reply) => {
        await removeSession(
          resources,
          await requireSession(resources.db, request.tenantId, request.params.id),
        );
        return reply.code(204).send();
      },
    );
  };
}
