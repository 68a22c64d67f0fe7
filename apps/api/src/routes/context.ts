import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sessionContext } from '@compactor/sessions';
import type { ApiResources } from '../resources';
import { ContextOut, ContextQuery, RECALL_TOOL, SessionParams } from '@compactor/contract';
import { commonErrors } from '../http/route-errors';

/** `GET /v1/sessions/:id/context`: what the model should see next (`sessionContext`). */
export function contextRoutes(resources: ApiResources): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/sessions/:id/context',
      {
        schema: {
          tags: ['context'],
          summary: 'What the model should see next (native messages or a Chat Completions array)',
          description:
            "The pinned system messages, the latest compaction's summary, then the kept and newer messages. " +
            'After a completed compaction it fits `status.usable`. A pruned tool output reads ' +
            '`[Old tool result content cleared — recall <callId>]` (`GET …/recall?callId=` returns it); a part too large for the window (a giant output, a pasted ' +
            'text, huge arguments) is shown clamped: its head and tail around a marker such as ' +
            '`[... tool output clamped to fit the context window: 140,000 of 152,345 characters, 38,102 tokens ' +
            'left out; call call_2]` (arguments as `{ "_clamped": "…" }`). The raw history ' +
            '(`GET …/messages`) keeps every part whole. `format=openai&tools=recall` adds `tools`: the ' +
            'Chat Completions definition of a `recall` tool (by the call id a cleared marker names, or ' +
            'by words) that the clients execute with `GET …/recall`.',
          params: SessionParams,
          querystring: ContextQuery,
          response: { 200: ContextOut, ...commonErrors },
        },
      },
      async (request) => {
        const context = await sessionContext(
          resources.db,
          { tenantId: request.tenantId, id: request.params.id },
          request.query.format,
        );
        // Absent unless asked for: the answer stays byte for byte what clients without tools read.
        return request.query.tools === undefined ? context : { ...context, tools: [RECALL_TOOL] };
      },
    );
  };
}
