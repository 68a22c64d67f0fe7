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
import { requireSession } from '../services/sessions';
import { sessionStatus } from '../services/status';

const AppendResponse = z.object({
  messages: z.array(z.object({ id: z.string(), seq: z.number().int(), created: z.boolean() })),
  status: StatusOut,
  compaction: CompactionOut.pick({ id: true, status: true, reason: true })
    .nullable()
    .describe('The compaction this append triggered, if any'),
});

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
        return reply.code(201).send({
          messages: appended,
          status: await sessionStatus(resources.db, session),
          compaction: null,
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
          response: { 200: MessageOut, ...commonErrors },
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
        return patchMessage(resources.db, session.pk, request.params.messageId, {
          ...(finish !== undefined ? { finish } : {}),
          ...(error !== undefined ? { error } : {}),
          ...(usage !== undefined ? { usage } : {}),
          parts,
        });
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
