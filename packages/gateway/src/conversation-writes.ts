/**
 * Writing what a request adds to its session: tool results onto the stored messages that hold
 * their calls, then the new messages, then the links of every new element. Links come last, so a
 * linked element is stored: a request that failed halfway is retried from its first unlinked
 * element, and the writes it repeats are no-ops (message ids and tool-result upserts).
 */
import {
  DropInInputError,
  suffixWrites,
  type AppendMessageInput,
  type ConversationElement,
  type ToolResultWrite,
} from '@compactor/core';
import {
  clearStoredAnswer,
  findToolCallOwners,
  insertConversationLinks,
  storedMessageIds,
  type SessionRow,
  type ToolCallOwner,
} from '@compactor/db';
import type { PartInput } from '@compactor/contract';
import type { CountedAhead, FreshReading } from '@compactor/sessions';
import type { GatewayDeps } from './conversation-types';
import type { PrefetchedOwners } from './conversation-resolve';

/** An append carries at most this many messages (the contract's batch limit). */
const APPEND_BATCH = 1000;

/** The session a request writes to, and the conversation key its links carry. */
export interface ChainTarget {
  session: SessionRow;
  conversationKey: string | null;
}

/** What a request writes: tool results by stored message, new messages, and the elements to link. */
export interface SuffixPlan {
  from: number;
  results: Map<string, PartInput[]>;
  appends: AppendMessageInput[];
  /** The appends' batches counted before their session was created ({@link countAppendsAhead}). */
  counted?: CountedAhead[];
}

/**
 * The writes of the elements from `from` on, into `session` (null: a session still to create).
 * Every result's call is found before anything is written: a result for a call the conversation
 * never made is refused ({@link DropInInputError}) with nothing stored.
 */
export async function planSuffix(
  deps: GatewayDeps,
  session: SessionRow | null,
  elements: readonly ConversationElement[],
  from: number,
  protocol: 'openai' | 'anthropic',
  prefetched?: PrefetchedOwners,
): Promise<SuffixPlan> {
  const { appends, patches } = suffixWrites(elements, from);
  const callIds = [...new Set(patches.map((p) => p.callId))];
  // Read with the session's lookup when they were the ones asked for there.
  const readAhead =
    prefetched !== undefined &&
    session?.pk === prefetched.sessionPk &&
    callIds.every((id) => prefetched.callIds.has(id));
  const owners =
    session && callIds.length > 0
      ? readAhead
        ? prefetched.owners
        : await findToolCallOwners(deps.resources.db, session.pk, callIds)
      : new Map<string, ToolCallOwner>();
  const results = new Map<string, PartInput[]>();
  for (const patch of patches) {
    const owner = owners.get(patch.callId);
    if (!owner) throw unknownCall(elements, from, patch.callId, protocol);
    const parts = results.get(owner.messageId) ?? [];
    // A result's files name its call: the PATCH upserts the call's part and appends them.
    parts.push(resultPart(owner, patch), ...(patch.files ?? []));
    results.set(owner.messageId, parts);
  }
  // A message stored without its link (a request or an answer cut short between the two) is not
  // appended again: its id says it is the same element; results folded into it become patches.
  // Only an assistant message can be stored in another form (the answer, with its usage and
  // finish) and only one with results needs patches: a request whose appends are neither (a
  // user's next message) appends them as they are, a no-op for one stored already.
  const mayBeStored = appends.filter(
    (m) => m.id !== undefined && (m.role === 'assistant' || resultParts(m).length > 0),
  );
  if (!session || mayBeStored.length === 0) return { from, results, appends };
  const stored = await storedMessageIds(
    deps.resources.db,
    session.pk,
    mayBeStored.map((m) => m.id!),
  );
  const fresh: AppendMessageInput[] = [];
  for (const message of appends) {
    if (message.id === undefined || !stored.has(message.id)) {
      fresh.push(message);
      continue;
    }
    const finished = resultParts(message);
    if (finished.length > 0) results.set(message.id, [...(results.get(message.id) ?? []), ...finished]);
  }
  return { from, results, appends: fresh };
}

/** A message's parts that are results: finished tool calls, and the files that name their call. */
function resultParts(message: AppendMessageInput): PartInput[] {
  return message.parts.filter(
    (p) =>
      (p.type === 'tool' && p.status !== 'pending' && p.status !== 'running') ||
      (p.type === 'file' && p.callId !== undefined),
  );
}

/**
 * The plan of a session still to create, its appends counted for `modelId`: what the count refuses
 * (an image the media checks refuse) is refused before the session is created, so a refused
 * request leaves nothing behind.
 */
export async function countAppendsAhead(
  deps: GatewayDeps,
  plan: SuffixPlan,
  modelId: string,
): Promise<SuffixPlan> {
  const counted: CountedAhead[] = [];
  for (let i = 0; i < plan.appends.length; i += APPEND_BATCH)
    counted.push(await deps.messages.countAhead(plan.appends.slice(i, i + APPEND_BATCH), modelId));
  return { ...plan, counted };
}

/**
 * Writes a planned suffix into the session; `link` then links its elements into the chain (the
 * caller runs it, alongside what may run with it: links come after the writes they name) and
 * drops the raw answer kept at `clearAnswerAt` (the chain moves past it) with the links, or
 * alone when there are none. `reading`: the status reading of its last write to the session's
 * messages (see `SyncedConversation.reading`), null when it wrote none.
 */
export async function writeSuffix(
  deps: GatewayDeps,
  target: ChainTarget,
  elements: readonly ConversationElement[],
  plan: SuffixPlan,
  clearAnswerAt: number | null = null,
): Promise<{ reading: FreshReading | null; link: () => Promise<unknown> }> {
  if (plan.from >= elements.length) {
    const link = async () => {
      if (clearAnswerAt !== null)
        await clearStoredAnswer(deps.resources.db, target.session.pk, clearAnswerAt);
    };
    return { reading: null, link };
  }
  const { session } = target;
  const sessionTarget = { tenantId: session.tenantId, id: session.id };
  // Only the last write's reading can describe the session as this request leaves it.
  let reading: FreshReading | null = null;
  for (const [messageId, parts] of plan.results) {
    ({ reading } = await deps.messages.finishWithReading(
      sessionTarget,
      messageId,
      { parts },
      deps.log,
      session,
    ));
  }
  for (let i = 0; i < plan.appends.length; i += APPEND_BATCH) {
    const counted = plan.counted?.[i / APPEND_BATCH];
    ({ reading } = counted
      ? await deps.messages.appendCountedAhead(sessionTarget, counted, deps.log)
      : await deps.messages.appendWithReading(
          sessionTarget,
          { kind: 'parsed', messages: plan.appends.slice(i, i + APPEND_BATCH) },
          deps.log,
        ));
  }
  const link = () =>
    insertConversationLinks(
      deps.resources.db,
      { sessionPk: session.pk, tenantId: session.tenantId, conversationKey: target.conversationKey },
      elements.slice(plan.from).map((element) => ({
        position: element.position,
        chainHash: Buffer.from(element.hash, 'hex'),
        messageId: element.message?.id ?? null,
      })),
      { now: deps.resources.clock(), clearRawAnswerAt: clearAnswerAt },
    );
  return { reading, link };
}

/** The result on its call's part, with the call's stored input (the write need not read it again). */
function resultPart(owner: ToolCallOwner, result: ToolResultWrite): PartInput {
  return result.error !== null
    ? {
        type: 'tool',
        callId: owner.callId,
        tool: owner.tool,
        status: 'error',
        input: owner.input,
        output: null,
        error: result.error,
      }
    : {
        type: 'tool',
        callId: owner.callId,
        tool: owner.tool,
        status: 'completed',
        input: owner.input,
        output: result.output ?? '',
        error: null,
      };
}

function unknownCall(
  elements: readonly ConversationElement[],
  from: number,
  callId: string,
  protocol: 'openai' | 'anthropic',
): DropInInputError {
  const position =
    elements.find((e) => e.position >= from && e.toolResults.some((result) => result.callId === callId))
      ?.position ?? from;
  // Anthropic's `system` field is element 0 when present: messages[i] is element i + 1.
  const offset = protocol === 'anthropic' && elements[0]?.role === 'system' ? 1 : 0;
  return new DropInInputError(
    ['messages', position - offset],
    `a tool result for call ${JSON.stringify(callId)}, which no earlier assistant message of the conversation made`,
  );
}
