import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { findTenantCompaction, listCompactionSteps, listCompactionsPage } from '@compactor/db';
import { invalid, notFound } from '../http/errors';
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
} from '@compactor/contract';
import { reportOverflow, requestManualCompaction } from '../services/compactions';
import { requireSession } from '../services/sessions';
import type { TenantLimits } from '../services/tenant-limits';
import { compactionStepView, compactionView } from '../services/views';

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
        // No body at all (no content type) is the same as `{}`; a JSON `null` is still a 400.
        preValidation: async (request) => {
          if (request.body == null && request.headers['content-type'] === undefined) request.body = {};
        },
      },
      async (request, reply) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        const { compaction, created } = await requestManualCompaction(
          resources,
          limits,
          session,
          request.body ?? {},
          request.headers['idempotency-key'],
        );
        return reply.code(created ? 202 : 200).send(compactionView(compaction, session.id));
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
      async (request, reply) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        return reply.code(202).send(await resources.jobs.startPrune(session, 'manual'));
      },
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
      async (request) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        const { kind, matched, compaction } = await reportOverflow(resources, limits, session, request.body);
        return {
          overflow: kind !== null,
          kind,
          matched,
          compaction: compaction && compactionView(compaction, session.id),
        };
      },
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
      async (request) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        const { limit, before } = request.query;
        // One more than asked says whether another page follows.
        const rows = await listCompactionsPage(resources.db, session.pk, {
          limit: limit + 1,
          beforeId: before,
        });
        if (rows === null) {
          const message = `before: ${before} is not a compaction of this session`;
          throw invalid(message, { issues: [{ path: 'querystring.before', message }] });
        }
        const page = rows.slice(0, limit);
        return {
          compactions: page.map((row) => compactionView(row, session.id)),
          nextBefore: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
        };
      },
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
      async (request) => {
        const found = await findTenantCompaction(resources.db, request.tenantId, request.params.id);
        if (!found) throw notFound('compaction');
        const steps = await listCompactionSteps(resources.db, found.compaction.id);
        return { ...compactionView(found.compaction, found.sessionId), steps: steps.map(compactionStepView) };
      },
    );
  };
}
