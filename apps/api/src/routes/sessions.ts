import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  createSessionWithinRate,
  getSession,
  patchSession,
  removeSession,
  type TenantLimits,
} from '@compactor/sessions';
import type { ApiResources } from '../resources';
import {
  MIN_CONTEXT_WINDOW,
  CreateSessionBody,
  ErrorBody,
  PatchSessionBody,
  SessionOut,
  SessionParams,
} from '@compactor/contract';
import { commonErrors } from '../http/route-errors';

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
            '`model.pricing` and `model.cache` override the catalog’s prices and prompt-cache behaviour ' +
            '(cache-aware pruning weighs them); the answer shows those in force, PATCH with null returns to the catalog, ' +
            'and a change of model id drops overrides it does not restate. ' +
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
        return reply.code(created ? 201 : 200).send(session);
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
      async (request) => getSession(resources.db, { tenantId: request.tenantId, id: request.params.id }),
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
      async (request) =>
        patchSession(resources.db, { tenantId: request.tenantId, id: request.params.id }, request.body),
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
        await removeSession(resources, { tenantId: request.tenantId, id: request.params.id });
        return reply.code(204).send();
      },
    );
  };
}
