import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  appendMessages,
  findMessage,
  listPartsOfMessages,
  loadHistoryPage,
  partFromRow,
  patchMessage,
  countPart,
  prepareMessages,
  type CompactionRow,
} from '@compactor/db';
import type { ApiResources } from '../resources';
import { commonErrors, SessionParams } from '../schemas/common';
import { CompactionOut } from '../schemas/compactions';
import {
  AppendMessagesBody,
  HistoryPage,
  HistoryQuery,
  MessageOut,
  MessageParams,
  PatchMessageBody,
  type PartInput,
} from '../schemas/messages';
import { StatusOut } from '../schemas/sessions';
import { afterWrite } from '../services/auto-trigger';
import { requireSession } from '../services/sessions';

const TriggeredCompaction = CompactionOut.pick({ id: true, status: true, reason: true });

const AppendResponse = z.object({
  messages: z.array(z.object({ id: z.string(), seq: z.number().int(), created: z.boolean() })),
  status: StatusOut,
  compaction: TriggeredCompaction.nullable().describe('The compaction this append triggered, if any'),
});

const PatchResponse = MessageOut.extend({
  compaction: TriggeredCompaction.nullable().describe('The compaction this update triggered, if any'),
});

/** An assistant turn is over: it finished for any reason but to run tool calls. */
const finishesTurn = (role: string, finish: string | null | undefined) =>
  role === 'assistant' && finish !== null && finish !== undefined && finish !== 'tool-calls';

const triggered = (row: CompactionRow | null) =>
  row && { id: row.id, status: row.status, reason: row.reason };

export function messageRoutes(resources: ApiResources): FastifyPluginAsyncZod {
  return async (app) => {
    const tags = ['messages'];

    app.post(
      '/v1/sessions/:id/messages',
      {
        schema: {
          tags,
          params: SessionParams,
          body: AppendMessagesBody,
          response: { 201: AppendResponse, ...commonErrors },
        },
      },
      async (request, reply) => {
        const session = await requireSession(resources.db, request.tenantId, request.params.id);
        // Counted before the transaction: tokenizing large outputs must not hold the session lock.
        const prepared = await prepareMessages(
          request.body.messages,
          resources.tokenizerFor(session.modelId),
          resources.clock(),
        );
        const appended = await appendMessages(resources.db, session.pk, prepared);
        // A re-posted (not created) message finishes nothing new.
        const finishedTurn = request.body.messages.some(
          (message, i) => appended[i]?.created === true && finishesTurn(message.role, message.finish),
        );
        const after = await afterWrite(resources, session, { finishedTurn, log: request.log });
        return reply.code(201).send({
          messages: appended,
          status: after.status,
          compaction: triggered(after.compaction),
        });
      },
    );

    app.patch(
      '/v1/sessions/:id/messages/:messageId',
      {
        schema: {
          tags,
          params: MessageParams,
          body: PatchMessageBody,
          response: { 200: PatchResponse, ...commonErrors },
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
        const parts = [];
        for (const part of inputs) parts.push(await countPart(part, counter));
        const { finish, error, usage } = request.body;
        const message = await patchMessage(resources.db, session.pk, request.params.messageId, {
          ...(finish !== undefined ? { finish } : {}),
          ...(error !== undefined ? { error } : {}),
          ...(usage !== undefined ? { usage } : {}),
          parts,
        });
        const after = await afterWrite(resources, session, {
          finishedTurn: finishesTurn(message.role, finish),
          log: request.log,
        });
        return { ...message, compaction: triggered(after.compaction) };
      },
    );

    app.get(
      '/v1/sessions/:id/messages',
      {
        schema: {
          tags,
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
