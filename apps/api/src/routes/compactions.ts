import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  compactionDetail,
  compactionsPage,
  reportOverflow,
  requestManualCompaction,
  requestPrune,
  revertCompaction,
  type TenantLimits,
} from '@compactor/sessions';
import type { ApiResources } from '../resources';
import { commonErrors } from '../http/route-errors';
import {
  ErrorBody,
  SessionParams,
  CompactionDetailOut,
  CompactionListQuery,
  CompactionOut,
  CompactionPage,
  CompactionParams,
  CreateCompactionBody,
  IdempotencyHeaders,
  OverflowBody,
  OverflowOut,
  PruneOut,
  RevertCompactionOut,
} from '@compactor/contract';

export function compactionRoutes(
  resources: ApiResources,
  { limits }: { limits: TenantLimits },
): FastifyPluginAsyncZod {
  return async (app) => {
    const tags = ['compactions'];

    app.post(
      '/v1/sessions/:id/compactions',
      {
        schema: {
          tags,
          summary: 'Compact a session now (202), or get the active compaction (200)',
          description:
            "A 429 `too_many_requests` with `Retry-After` when the session's tenant already has " +
            '`TENANT_MAX_ACTIVE_COMPACTIONS` compactions pending or running (over all its sessions) and this ' +
            'session none to join; it writes nothing.',
          params: SessionParams,
          headers: IdempotencyHeaders,
          body: CreateCompactionBody,
          response: { 200: CompactionOut, 202: CompactionOut, ...commonErrors, 429: ErrorBody },
        },
        // No body (none sent, or an empty one under a JSON content type) is the same as `{}`; a
        // JSON `null` is still a 400.
        preValidation: async (request) => {
          if (request.body === undefined) request.body = {};
        },
      },
      async (request, reply) => {
        const { compaction, created } = await requestManualCompaction(
          resources,
          limits,
          { tenantId: request.tenantId, id: request.params.id },
          request.body ?? {},
          request.headers['idempotency-key'],
        );
        return reply.code(created ? 202 : 200).send(compaction);
      },
    );

    app.post(
      '/v1/sessions/:id/prune',
      {
        schema: {
          tags,
          summary: 'Prune old tool outputs now (a prune-only job)',
          params: SessionParams,
          response: { 202: PruneOut, ...commonErrors },
        },
      },
      async (request, reply) =>
        reply
          .code(202)
          .send(await requestPrune(resources, { tenantId: request.tenantId, id: request.params.id })),
    );

    app.post(
      '/v1/sessions/:id/overflow',
      {
        schema: {
          tags,
          summary: 'Report what the provider said; an overflow starts an emergency compaction',
          description:
            'An overflow that would start a compaction is a 429 `too_many_requests` with `Retry-After` when the ' +
            "session's tenant already has `TENANT_MAX_ACTIVE_COMPACTIONS` compactions pending or running and this " +
            'session none to join.',
          params: SessionParams,
          body: OverflowBody,
          response: { 200: OverflowOut, ...commonErrors, 429: ErrorBody },
        },
      },
      async (request) =>
        reportOverflow(
          resources,
          limits,
          { tenantId: request.tenantId, id: request.params.id },
          request.body,
        ),
    );

    app.get(
      '/v1/sessions/:id/compactions',
      {
        schema: {
          tags,
          summary: "A session's compaction history, newest first",
          params: SessionParams,
          querystring: CompactionListQuery,
          response: { 200: CompactionPage, ...commonErrors },
        },
      },
      async (request) =>
        compactionsPage(resources.db, { tenantId: request.tenantId, id: request.params.id }, request.query),
    );

    app.get(
      '/v1/compactions/:id',
      {
        schema: {
          tags,
          summary: 'One compaction, with its step attempts',
          params: CompactionParams,
          response: { 200: CompactionDetailOut, ...commonErrors },
        },
      },
      async (request) => compactionDetail(resources.db, request.tenantId, request.params.id),
    );

    app.post(
      '/v1/compactions/:id/revert',
      {
        schema: {
          tags,
          summary: "Undo a session's latest completed compaction",
          description:
            'Restores, in one transaction, the context view the compaction replaced: its boundary, summary ' +
            'messages (they stay in the raw history), prune marks and clamps are undone, and it becomes ' +
            "`reverted`; messages appended since stay, after the restored boundary, and prune jobs' marks stay. " +
            'Only the latest completed compaction of a session (not reverted) can be reverted; the one before it ' +
            'then can be too. A 409 `conflict` says why not in `details.reason`: `compaction_active` (another ' +
            'compaction of the session is pending or running), `not_completed` (reverted already, failed, skipped or ' +
            'unfinished), `not_latest` (a later one defines the view), `history_purged` (the retention purge cleared ' +
            'what the restored view would show). The auto trigger then holds as after a failed compaction: until ' +
            'the session grows by a quarter of its threshold, unless it is over the usable window. ' +
            'Announces `compaction.reverted`.',
          params: CompactionParams,
          response: { 200: RevertCompactionOut, ...commonErrors },
        },
      },
      async (request) => revertCompaction(resources, request.tenantId, request.params.id),
    );
  };
}
