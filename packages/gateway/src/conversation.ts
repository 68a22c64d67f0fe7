/**
 * The conversation store: which session a drop-in request continues (the `X-Compactor-Session`
 * header, else the hash chain of its messages within the tenant), what of it is new, and the
 * upstream's answer stored so that the client's next request, which echoes it, extends the chain.
 */
import { ClientId } from '@compactor/contract';
import { chainHash, dropInMessageId, DropInInputError, type DropInAnswer } from '@compactor/core';
import { answerSlot, insertConversationLinks, rehashConversationLink, type SessionRow } from '@compactor/db';
import { InvalidInput, type FreshReading } from '@compactor/sessions';
import { conversationSerializer } from './conversation-locks';
import type {
  ConversationOutcome,
  ConversationRequest,
  GatewayDeps,
  StoredAnswer,
  SyncedConversation,
} from './conversation-types';
import { resolveConversation, type Resolution } from './conversation-resolve';
import { createDropInSession, dropInMetadataOf } from './conversation-sessions';
import { countAppendsAhead, planSuffix, writeSuffix } from './conversation-writes';
import { conversationAnswersKey, pendingAnswers, tenantAnswersKey } from './pending-answers';

export type {
  ConversationOutcome,
  ConversationRequest,
  GatewayDeps,
  StoredAnswer,
  SyncedConversation,
} from './conversation-types';

/** Resolves the session and writes what is new (appends + tool-result patches), linking every element into the chain. */
export async function syncConversation(
  deps: GatewayDeps,
  request: ConversationRequest,
): Promise<SyncedConversation> {
  return (await syncConversationWith(deps, request, null)).conversation;
}

/**
 * {@link syncConversation}, and `alongside` run once the writes are done, at the same time as
 * the links are written (still in the conversation's turn): the request's context read, which
 * needs the writes and not the links. Answers the conversation and what `alongside` gave.
 */
export async function syncConversationWith<T>(
  deps: GatewayDeps,
  request: ConversationRequest,
  alongside: ((conversation: SyncedConversation) => Promise<T>) | null,
): Promise<{ conversation: SyncedConversation; alongside: T }> {
  const { tenantId, sessionHeader, elements } = request;
  if (sessionHeader !== undefined && !ClientId.safeParse(sessionHeader).success)
    throw new InvalidInput(
      'X-Compactor-Session: a session id is 1-200 printable ASCII characters without spaces',
    );
  const last = elements[elements.length - 1];
  if (!last) throw new DropInInputError(['messages'], 'at least one message is required');
  // The conversation's answers still being stored in this process: the request continues from them.
  await pendingAnswers.settled(
    sessionHeader !== undefined
      ? conversationAnswersKey(tenantId, sessionHeader)
      : tenantAnswersKey(tenantId),
  );
  const serializer = conversationSerializer(deps.messages);
  const resolve = () => resolveConversation(deps, tenantId, sessionHeader, request.protocol, elements);
  // Requests under one header are one conversation: one at a time.
  const finish = async (resolution: Resolution) => {
    const { conversation, link } = await apply(deps, request, resolution);
    const [, extra] = await Promise.all([link(), alongside ? alongside(conversation) : undefined]);
    return { conversation, alongside: extra as T };
  };
  if (sessionHeader !== undefined)
    return serializer.run(JSON.stringify([tenantId, 'header', sessionHeader]), async () =>
      finish(await resolve()),
    );
  // Without one, the session the chain finds is the conversation (a key shared by many
  // conversations, like their common first message, would queue unrelated agents behind each
  // other); a request that creates one queues behind its identical twins. What ran meanwhile
  // may have changed the answer: then it is resolved again, in turn.
  const before = serializer.completed;
  const first = await resolve();
  const key =
    first.kind === 'create'
      ? JSON.stringify([tenantId, 'create', first.conversationKey, last.hash])
      : JSON.stringify([tenantId, 'session', first.session.pk]);
  return serializer.run(key, async () => finish(serializer.completed === before ? first : await resolve()));
}

const linked = () => Promise.resolve();

async function apply(
  deps: GatewayDeps,
  request: ConversationRequest,
  resolution: Resolution,
): Promise<{ conversation: SyncedConversation; link: () => Promise<unknown> }> {
  const { elements } = request;
  const end = elements[elements.length - 1]!.hash;
  const synced = (
    session: SessionRow,
    outcome: ConversationOutcome,
    conversationKey: string | null,
    extra: {
      divergedFrom?: string;
      replay?: StoredAnswer;
      answerPosition?: number;
      reading?: FreshReading | null;
    } = {},
  ): SyncedConversation => ({
    session: { tenantId: session.tenantId, id: session.id },
    outcome,
    divergedFrom: extra.divergedFrom ?? null,
    replay: extra.replay ?? null,
    answerPosition: extra.answerPosition ?? elements.length,
    recall: dropInMetadataOf(session, request.protocol).recall,
    row: extra.reading?.session ?? session,
    reading: extra.reading ?? null,
    chain: { sessionPk: session.pk, conversationKey, end },
  });

  switch (resolution.kind) {
    case 'replay': {
      const conversation = synced(resolution.session, 'replayed', resolution.conversationKey, {
        replay: resolution.raw as StoredAnswer,
        answerPosition: resolution.position,
      });
      return { conversation, link: linked };
    }
    case 'extend': {
      const { session, conversationKey, echoAt, clearAnswerAt } = resolution;
      const { db } = deps.resources;
      const plan = await planSuffix(
        deps,
        session,
        elements,
        resolution.from,
        request.protocol,
        resolution.owners,
      );
      if (echoAt !== null)
        await rehashConversationLink(db, session.pk, echoAt, Buffer.from(elements[echoAt]!.hash, 'hex'));
      const { reading, link } = await writeSuffix(
        deps,
        { session, conversationKey },
        elements,
        plan,
        clearAnswerAt,
      );
      return { conversation: synced(session, 'extended', conversationKey, { reading }), link };
    }
    case 'create': {
      const { divergedFrom, conversationKey } = resolution;
      const { overrides } = request;
      const planned = await planSuffix(deps, null, elements, 0, request.protocol);
      // A fork keeps the model and policy of the session it left; the request's overrides win.
      const model = divergedFrom
        ? {
            id: divergedFrom.modelId,
            provider: divergedFrom.provider,
            contextWindow: overrides.contextWindow ?? divergedFrom.contextWindow,
            maxOutputTokens: overrides.maxOutputTokens ?? divergedFrom.maxOutputTokens,
            ...(overrides.contextWindow === undefined ? { inputLimit: divergedFrom.inputLimit } : {}),
          }
        : {
            id: request.model,
            provider: request.protocol,
            ...(overrides.contextWindow !== undefined ? { contextWindow: overrides.contextWindow } : {}),
            ...(overrides.maxOutputTokens !== undefined
              ? { maxOutputTokens: overrides.maxOutputTokens }
              : {}),
          };
      const plan = await countAppendsAhead(deps, planned, model.id);
      const left = divergedFrom && dropInMetadataOf(divergedFrom, request.protocol);
      const session = await createDropInSession(deps, {
        tenantId: request.tenantId,
        id: resolution.id,
        model,
        ...(divergedFrom ? { policy: divergedFrom.policy as never } : {}),
        metadata: {
          protocol: request.protocol,
          recall: overrides.recall ?? left?.recall ?? true,
          conversationKey,
          ...(divergedFrom ? { divergedFrom: divergedFrom.id } : {}),
        },
        chainEnd: end,
      });
      const { reading, link } = await writeSuffix(deps, { session, conversationKey }, elements, plan);
      const conversation = divergedFrom
        ? synced(session, 'diverged', conversationKey, { divergedFrom: divergedFrom.id, reading })
        : synced(session, 'created', conversationKey, { reading });
      return { conversation, link };
    }
  }
}

/** Stores the upstream answer (assistant message, usage) and links its echo at `answerPosition`; keeps `raw` for an identical retry. */
export async function recordAnswer(
  deps: GatewayDeps,
  conversation: SyncedConversation,
  answer: DropInAnswer,
  raw: StoredAnswer,
): Promise<void> {
  if (conversation.outcome === 'replayed') return;
  const { db } = deps.resources;
  const { session, answerPosition: position, chain } = conversation;
  const hash = chainHash(chain.end, answer.echo);
  const id = dropInMessageId(position, hash);
  const lockKey = JSON.stringify([session.tenantId, 'answer', chain.sessionPk, position]);
  await conversationSerializer(deps.messages).run(lockKey, async () => {
    const slot = await answerSlot(db, chain.sessionPk, position, id);
    // A concurrent identical request answered first: its answer is the conversation's.
    if (slot.linked || !slot.sessionExists) return;
    // Stored already when an earlier attempt died before linking it: link it now. The client
    // has its answer already (storeAnswer): the status the auto trigger needs is read in the
    // append's own round trip rather than in one after it.
    if (!slot.messageStored)
      await deps.messages.append(
        session,
        { kind: 'parsed', messages: [{ ...answer.message, id }] },
        deps.log,
      );
    await insertConversationLinks(
      db,
      { sessionPk: chain.sessionPk, tenantId: session.tenantId, conversationKey: chain.conversationKey },
      [{ position, chainHash: Buffer.from(hash, 'hex'), messageId: id }],
      { now: deps.resources.clock(), rawAnswer: raw },
    );
  });
}
