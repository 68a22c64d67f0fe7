import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { resolveStoredPolicy, type PolicyInput } from '@compactor/core';
import { sessionModel, type SessionRow } from '@compactor/db';
import type { ApiResources } from '../resources';
import {
  MIN_CONTEXT_WINDOW,
  CreateSessionBody,
  PatchSessionBody,
  SessionOut,
  SessionParams,
  type Session,
} from '@compactor/contract';
import { commonErrors } from '../http/route-errors';
import { createSession, patchSession, removeSession, requireSession } from '../services/sessions';
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

export function sessionRoutes(resources: ApiResources): FastifyPluginAsyncZod {
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
            'PATCH checks the model it leaves the same way.',
          body: CreateSessionBody,
          response: { 200: SessionOut, 201: SessionOut, ...commonErrors },
        },
      },
      async (request, reply) => {
        const { session, created } = await createSession(resources.db, request.tenantId, request.body);
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
