import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Part } from '@compactor/core';
import {
  findMessage,
  listPartsOfMessages,
  loadHistoryPage,
  partFromRow,
  patchMessage,
  countPart,
  type CompactionRow,
} from '@compactor/db';
import type { ApiResources } from '../resources';
import { commonErrors } from '../http/route-errors';
import {
  AppendMessagesBody,
  AppendResponse,
  ErrorBody,
  PatchResponse,
  SessionParams,
  HistoryPage,
  HistoryQuery,
  MessageParams,
  PatchMessageBody,
  type PartInput,
} from '@compactor/contract';
import { afterWrite } from '../services/auto-trigger';
import type { TenantLimits } from '../services/tenant-limits';
import { SessionWriteQueue, sessionKey } from '../services/session-writes';
import { appendCounted, KnownSessions, knownSession } from '../services/append';
import { requireSession } from '../services/sessions';
import { finishesTurn } from '../services/turns';
import { parsedBody, unparsedBody } from '../services/append-sources';
import { AppendBodyThread } from '../services/large-bodies/append-body-thread';
import { LARGE_APPENDS_IN_FLIGHT, LargeAppendSlots } from '../services/large-bodies/large-append-slots';
import {
  leaveLargeBodiesUnparsed,
  passingUnparsedBodies,
  UnparsedBody,
} from '../services/large-bodies/unparsed-body';
import { validatorCompiler } from 'fastify-type-provider-zod';

/** Writes to one session a process queues before refusing more (see {@link SessionWriteQueue}). */
export const DEFAULT_SESSION_WRITE_QUEUE_LIMIT = 32;

const triggered = (row: CompactionRow | null) =>
  row && { id: row.id, status: row.status, reason: row.reason };

export function messageRoutes(
  resources: ApiResources,
  {
    limits,
    sessionWriteQueueLimit = DEFAULT_SESSION_WRITE_QUEUE_LIMIT,
    largeAppendsInFlight = LARGE_APPENDS_IN_FLIGHT,
  }: {
    limits: TenantLimits;
    sessionWriteQueueLimit?: number | undefined;
    largeAppendsInFlight?: number | undefined;
  },
): FastifyPluginAsyncZod {
  return async (app) => {
    const tags = ['messages'];
    const writes = new SessionWriteQueue(sessionWriteQueueLimit);
    const sessions = new KnownSessions();
    // Large append bodies are parsed, counted and serialised off the event loop (see UnparsedBody).
    const bodyThread = new AppendBodyThread();
    const largeAppends = new LargeAppendSlots(largeAppendsInFlight);
    app.addHook('onClose', () => bodyThread.close());
    leaveLargeBodiesUnparsed(app, { method: 'POST', url: '/v1/sessions/:id/messages' });

    app.post(
      '/v1/sessions/:id/messages',
      {
        schema: {
          tags,
          summary: 'Append a batch of messages (idempotent by client id)',
          description:
            'Message ids are 1–200 printable ASCII characters, never `.` or `..` (no URL could address them). ' +
            'A 409 `conflict` refuses an id stored with other content, and a tool part that carries a result ' +
            '(completed or error) for a call still pending or running in another message, under the same call ' +
            'id and tool, whatever its `input`: PATCH that message instead (`details` names it). ' +
            "An auto compaction the trigger asks for waits its turn while the session's tenant has " +
            '`TENANT_MAX_ACTIVE_COMPACTIONS` compactions pending or running: the append succeeds, `compaction` and ' +
            "`status.activeCompaction` are null, and a worker starts it when one of the tenant's compactions ends.",
          params: SessionParams,
          body: AppendMessagesBody,
          response: { 201: AppendResponse, ...commonErrors, 429: ErrorBody },
        },
        validatorCompiler: passingUnparsedBodies(validatorCompiler),
      },
      async (request, reply) => {
        const { tenantId } = request;
        const { id } = request.params;
        const key = sessionKey(tenantId, id);
        const body = request.body as typeof request.body | UnparsedBody;
        // Its place in the session's queue first: a refused append costs no counting.
        const place = writes.reserve(key);
        // A large body keeps its bytes and rows in memory until written: a bounded number at once.
        let release: (() => void) | undefined;
        try {
          release = body instanceof UnparsedBody ? largeAppends.take() : undefined;
          // The model whose encoding counts the batch: the one the session had at its last append
          // here, or looked up. The append checks it under the session's lock.
          const known = sessions.get(key) ?? knownSession(await requireSession(resources.db, tenantId, id));
          const source =
            body instanceof UnparsedBody
              ? unparsedBody(resources, bodyThread, body.segments)
              : parsedBody(resources, body.messages);
          // Counted before the write: tokenizing large outputs must not wait in the session's queue.
          const prepared = await source.prepare(known.modelId);
          // The write and what it triggers, one at a time per session (see SessionWriteQueue).
          const { appended, after } = await place.run(async () => {
            const { session, appended, turnEnds, statusInputs } = await appendCounted(
              resources,
              { tenantId, id },
              known,
              prepared,
              { source, sessions, key },
            );
            // A re-posted (not created) message finishes nothing new.
            const finishedTurn = appended.some((message, i) => message.created && turnEnds[i] === true);
            return {
              appended,
              after: await afterWrite(resources, limits, session, {
                finishedTurn,
                log: request.log,
                ...(statusInputs ? { prefetched: statusInputs } : {}),
              }),
            };
          });
          return reply.code(201).send({
            messages: appended,
            status: after.status,
            compaction: triggered(after.compaction),
            prune: after.prune,
          });
        } finally {
          place.release();
          release?.();
        }
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
      async (request) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        const counter = resources.tokenizerFor(session.modelId);
        const inputs = await withStoredToolInputs(
          resources,
          session.pk,
          request.params.messageId,
          request.body.parts,
        );
        const parts: Part[] = [];
        for (const part of inputs) parts.push(await countPart(part, counter));
        const { finish, error, usage } = request.body;
        const { message, after } = await writes.run(
          sessionKey(request.tenantId, request.params.id),
          async () => {
            const message = await patchMessage(resources.db, session.pk, request.params.messageId, {
              ...(finish !== undefined ? { finish } : {}),
              ...(error !== undefined ? { error } : {}),
              ...(usage !== undefined ? { usage } : {}),
              parts,
            });
            const after = await afterWrite(resources, limits, session, {
              finishedTurn: finishesTurn(message.role, finish),
              log: request.log,
            });
            return { message, after };
          },
        );
        return {
          ...message,
          status: after.status,
          compaction: triggered(after.compaction),
          prune: after.prune,
        };
      },
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
      async (request) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        return loadHistoryPage(resources.db, session.pk, request.query);
      },
    );
  };
}

/**
 * A PATCH may omit a tool call's `input` when it only reports the result; the stored input is
 * used then, so the part's token count stays right.
 */
async function withStoredToolInputs(
  resources: ApiResources,
  sessionPk: number,
  messageId: string,
  parts: PartInput[] | undefined,
): Promise<PartInput[]> {
  if (!parts?.some((p) => p.type === 'tool' && p.input === undefined)) return parts ?? [];
  const message = await findMessage(resources.db, sessionPk, messageId);
  if (!message) return parts;
  const stored = new Map(
    (await listPartsOfMessages(resources.db, [message.pk]))
      .map(partFromRow)
      .flatMap((p) => (p.type === 'tool' ? [[p.callId, p.input] as const] : [])),
  );
  return parts.map((p) =>
    p.type === 'tool' && p.input === undefined ? { ...p, input: stored.get(p.callId) } : p,
  );
}
