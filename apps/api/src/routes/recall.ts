import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ErrorBody, RecallQuery, RecallResponse, SessionParams } from '@compactor/contract';
import { recall } from '@compactor/sessions';
import type { ApiResources } from '../resources';
import { commonErrors } from '../http/route-errors';

/** `GET /v1/sessions/:id/recall`: what compaction cleared, by call id, by words, by ledger section or by media id (`recall`). */
export function recallRoutes(resources: ApiResources): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/sessions/:id/recall',
      {
        schema: {
          tags: ['context'],
          summary:
            'Recall what compaction cleared: one output by call id, a search of the history, a ledger section, or an image by media id',
          description:
            'Compaction deletes nothing until retention purges it. `callId` (the id a marker ' +
            "`[Old tool result content cleared — recall <callId>]` names) returns that call's stored " +
            'output (`kind: "call"`; 404 when the session has no finished call with that id, 410 `gone` ' +
            'once retention purged it). `q` (websearch syntax: all words, "a phrase", `or`, `-word`) ' +
            'searches what the model no longer sees verbatim — messages before the boundary (not the ' +
            'pinned system messages nor summaries) and cleared tool outputs — and returns up to `limit` ' +
            'passages, best first, each an excerpt of at most 1,000 characters around the match ' +
            '(`kind: "search"`); purged text is not searched. `kind` (`files`, `commands` or `facts`) ' +
            "lists that section of the session's artifact ledger whole — everything its completed " +
            'compactions covered, newest first, `limit` entries a page (default 100, at most 500) from ' +
            "`cursor` (the previous page's `nextCursor`) — with the open errors (commands) or the " +
            'constraints the summary had no room for (facts) (`kind: "ledger"`; empty before the first ' +
            "compaction; a revert puts the previous compaction's ledger back). `mediaId` (the id a " +
            'marker `[Older image … media id <id>]` names) returns that image or document whole, as the ' +
            'file part it was posted as with its bytes as a `data:` URL, its message, its call if a tool ' +
            'returned it, and its size (`kind: "media"`; 404 when no part of the session refers to it). ' +
            'Give exactly one of `callId`, `q`, `kind` and `mediaId`.',
          params: SessionParams,
          querystring: RecallQuery,
          response: { 200: RecallResponse, ...commonErrors, 410: ErrorBody },
        },
      },
      async (request) =>
        recall(resources.db, { tenantId: request.tenantId, id: request.params.id }, request.query),
    );
  };
}
