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
            'It always fits `usable` less the provider overhead the usage reports measured: when the stored view ' +
            'is over (a compaction running or just requested, an append larger than the headroom), it is served ' +
            'fitted at once, without the LLM, and `fit` says how: `prepared` (a ready prepared summary in place of ' +
            'what it covers), `interim` (old tool outputs cleared, oversized parts clamped, then the oldest messages ' +
            'replaced by one note that counts them and keeps the goal, the constraints and the latest request; ' +
            'the `recall` tool finds them by words); `view` is the stored view as it is, `over` only when the pinned ' +
            'system messages alone exceed `usable`. `wait=<ms>` waits that long at most for the active compaction ' +
            'first; `fit=none` returns the stored view as it is (`fit`: `view` or `over`). A pruned tool output reads ' +
            '`[Old tool result content cleared — recall <callId>]` (`GET …/recall?callId=` returns it); a part too large for the window (a giant output, a pasted ' +
            'text, huge arguments) is shown clamped: its head and tail around a marker such as ' +
            '`[... tool output clamped to fit the context window: 140,000 of 152,345 characters, 38,102 tokens ' +
            'left out; call call_2]` (arguments keep their paths and command line, the rest becomes ' +
            '`"_clamped": "…"` beside them; `{ "_clamped": "…" }` when only that fits). The raw history ' +
            '(`GET …/messages`) keeps every part whole. `format=openai&tools=recall` adds `tools`: the ' +
            'Chat Completions definition of a `recall` tool (by the call id a cleared marker names, by ' +
            'words, by a section of what the session touched, or by the media id an `[Older image … media ' +
            'id <id>]` marker names) that the clients execute with `GET …/recall`.',
          params: SessionParams,
          querystring: ContextQuery,
          response: { 200: ContextOut, ...commonErrors },
        },
      },
      async (request) => {
        const { format, fit, wait } = request.query;
        const context = await sessionContext(
          resources,
          { tenantId: request.tenantId, id: request.params.id },
          { format, fit, waitMs: wait },
        );
        // Absent unless asked for: the answer stays byte for byte what clients without tools read.
        return request.query.tools === undefined ? context : { ...context, tools: [RECALL_TOOL] };
      },
    );
  };
}
