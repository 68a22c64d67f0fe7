import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { historyPage, type SessionMessages } from '@compactor/sessions';
import type { ApiResources } from '../resources';
import { commonErrors } from '../http/route-errors';
import {
  AppendIdempotencyHeaders,
  AppendMessagesBody,
  AppendResponse,
  ErrorBody,
  PatchResponse,
  SessionParams,
  HistoryPage,
  HistoryQuery,
  MessageParams,
  PatchMessageBody,
} from '@compactor/contract';
import { leaveLargeBodiesUnparsed, passingUnparsedBodies, UnparsedBody } from '../http/unparsed-body';
import { bodyBytes, LargeWrites, type LargeWriteSettings } from '../http/large-writes';

export function messageRoutes(
  resources: ApiResources,
  {
    messages,
    largeWrites,
  }: { messages: SessionMessages; largeWrites?: LargeWrites | LargeWriteSettings | undefined },
): FastifyPluginAsyncZod {
  return async (app) => {
    // Large appends take their turn here, one at a time per process (see LargeWrites).
    const largeWriteTurns = largeWrites instanceof LargeWrites ? largeWrites : new LargeWrites(largeWrites);
    const tags = ['messages'];
    // Large append bodies reach the handler unread, to be parsed off the event loop (see UnparsedBody).
    leaveLargeBodiesUnparsed(app, { method: 'POST', url: '/v1/sessions/:id/messages' });

    app.post(
      '/v1/sessions/:id/messages',
      {
        schema: {
          tags,
          summary: 'Append a batch of messages (idempotent by client id or Idempotency-Key)',
          description:
            'Message ids are 1–200 printable ASCII characters, never `.` or `..` (no URL could address them). ' +
            'A message sent again with its id and content is stored once (answered `created: false`). ' +
            'A message sent without an id gets a random one, unless the request has an `Idempotency-Key`: then ' +
            'its id is derived from the key, the tenant, the session and its place in the batch ' +
            '(`idem_<32 hex digits>_<index>`), so a retry of a batch answered 503 (which may have committed ' +
            'once Postgres came back) with the same key stores it once, and the key with other messages in ' +
            'those places is a 409. ' +
            'A 409 `conflict` refuses an id stored with other content, and a tool part that carries a result ' +
            '(completed or error) for a call still pending or running in another message, under the same call ' +
            'id and tool, whatever its `input`: PATCH that message instead (`details` names it). ' +
            "An auto compaction the trigger asks for waits its turn while the session's tenant has " +
            '`TENANT_MAX_ACTIVE_COMPACTIONS` compactions pending or running: the append succeeds, `compaction` and ' +
            "`status.activeCompaction` are null, and a worker starts it when one of the tenant's compactions ends.",
          params: SessionParams,
          headers: AppendIdempotencyHeaders,
          body: AppendMessagesBody,
          response: { 201: AppendResponse, ...commonErrors, 429: ErrorBody },
        },
        validatorCompiler: passingUnparsedBodies(validatorCompiler),
      },
      async (request, reply) => {
        const body = request.body as typeof request.body | UnparsedBody;
        const release = await largeWriteTurns.enter(request.tenantId, bodyBytes(request));
        const answer = await messages
          .append(
            { tenantId: request.tenantId, id: request.params.id },
            {
              ...(body instanceof UnparsedBody
                ? { kind: 'unparsed', segments: body.segments }
                : { kind: 'parsed', messages: body.messages }),
              idempotencyKey: request.headers['idempotency-key'],
            },
            request.log,
          )
          .finally(release);
        return reply.code(201).send(answer);
      },
    );

    app.patch(
      '/v1/sessions/:id/messages/:messageId',
      {
        schema: {
          tags,
          summary: 'Finish a streamed turn: finish, usage, error, tool results',
          description:
            'Tool parts are upserted by call id and only move forward (pending → running → completed | error). ' +
            'A 409 `conflict` refuses a change to a finished or pruned call, to a message a compaction wrote, ' +
            'and to the parts of a message already behind the context boundary (`details.reason: message_compacted`: ' +
            'its summary was written without the change, which would reach the model nowhere). A result for a ' +
            'message a running compaction covers is accepted: that compaction summarises again. ' +
            'An auto compaction held back by `TENANT_MAX_ACTIVE_COMPACTIONS` waits its turn (`compaction` is null), ' +
            "as for an append. The answer is the message as stored now, with the session's `status` after the update.",
          params: MessageParams,
          body: PatchMessageBody,
          response: { 200: PatchResponse, ...commonErrors, 429: ErrorBody },
        },
      },
      async (request) =>
        messages.finish(
          { tenantId: request.tenantId, id: request.params.id },
          request.params.messageId,
          request.body,
          request.log,
        ),
    );

    app.get(
      '/v1/sessions/:id/messages',
      {
        schema: {
          tags,
          summary: 'The raw history, a page at a time (pruned outputs and summaries included)',
          params: SessionParams,
          querystring: HistoryQuery,
          response: { 200: HistoryPage, ...commonErrors },
        },
      },
      async (request) =>
        historyPage(resources.db, { tenantId: request.tenantId, id: request.params.id }, request.query),
    );
  };
}
