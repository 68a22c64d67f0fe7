import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { assembleContext, resolveStoredPolicy, toOpenAIMessages, type PolicyInput } from '@compactor/core';
import { loadContextRows } from '@compactor/db';
import type { ApiResources } from '../resources';
import { ContextOut, ContextQuery, SessionParams } from '@compactor/contract';
import { commonErrors } from '../http/route-errors';
import { requireSession } from '../services/sessions';

/**
 * `GET /v1/sessions/:id/context`: what the model should see next. The filter (latest completed
 * compaction, its boundary) runs in SQL; core renders the result.
 */
export function contextRoutes(resources: ApiResources): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/sessions/:id/context',
      {
        schema: {
          tags: ['context'],
          summary: 'What the model should see next (native messages or a Chat Completions array)',
          params: SessionParams,
          querystring: ContextQuery,
          response: { 200: ContextOut, ...commonErrors },
        },
      },
      async (request) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        const { pinSystemMessages } = resolveStoredPolicy(session.policy as PolicyInput);
        const rows = await loadContextRows(resources.db, session.pk, { pinSystemMessages });
        const context = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : [], {
          pinSystemMessages,
        });
        return {
          messages:
            request.query.format === 'openai'
              ? (toOpenAIMessages(context) as unknown as Record<string, unknown>[])
              : context.messages,
          compactionId: context.compactionId,
          boundarySeq: context.boundarySeq,
          tokens: context.tokens,
        };
      },
    );
  };
}
