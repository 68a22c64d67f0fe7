/**
 * Which session a drop-in request continues and how (docs/plans/dropin.md, "Resolution rules"):
 * it extends a stored chain, retries the request whose answer is stored, echoes the stored answer
 * in a form of its own, or diverges from what is stored (a new session, nothing stored changes).
 */
import type { ConversationElement } from '@compactor/core';
import {
  findMessage,
  findSessionByPk,
  lastConversationLink,
  listPartsOfMessages,
  longestChainMatch,
  namedSessionChainMatch,
  partFromRow,
  type ConversationLinkRow,
  type SessionRow,
  type ToolCallOwner,
} from '@compactor/db';
import type { GatewayDeps } from './conversation-types';
import { dropInMetadataOf } from './conversation-sessions';

/** How long an answer is sent again to a request identical to the one it answered. */
export const REPLAY_WINDOW_MS = 10 * 60_000;

export type Resolution =
  /** A new session for the whole request (`divergedFrom`: the session it left). */
  | { kind: 'create'; id: string | null; conversationKey: string | null; divergedFrom: SessionRow | null }
  /** Write the elements from `from` on into `session`. */
  | {
      kind: 'extend';
      session: SessionRow;
      conversationKey: string | null;
      from: number;
      /** The stored answer at this position, echoed in the client's own form: link its hash. */
      echoAt: number | null;
      /** The raw answer kept at this position is past: the chain moves on. */
      clearAnswerAt: number | null;
      /** Owners of tool calls read with the lookup, for the results among the suffix's. */
      owners?: PrefetchedOwners;
    }
  /** The request is the stored chain without its newest answer, stored moments ago. */
  | { kind: 'replay'; session: SessionRow; conversationKey: string | null; position: number; raw: unknown };

export async function resolveConversation(
  deps: GatewayDeps,
  tenantId: string,
  sessionHeader: string | undefined,
  protocol: 'openai' | 'anthropic',
  elements: readonly ConversationElement[],
): Promise<Resolution> {
  const { db } = deps.resources;
  const key = sessionHeader ?? null;
  const hashes = elements.map((e) => Buffer.from(e.hash, 'hex'));
  // With a header, its session and the chain's first probe go in one round trip.
  // The results the request most likely adds (those after its last assistant message): their
  // calls' owners are read in the same round trip, for the suffix's writes.
  const callIds = sessionHeader === undefined ? [] : trailingResultCallIds(elements);
  const {
    session: named,
    match,
    owners,
  } = sessionHeader === undefined
    ? { session: null, match: await longestChainMatch(db, tenantId, null, hashes), owners: null }
    : await namedSessionChainMatch(db, tenantId, sessionHeader, hashes, callIds);
  const prefetched = (session: SessionRow): { owners?: PrefetchedOwners } =>
    owners && named?.pk === session.pk && callIds.length > 0
      ? { owners: { sessionPk: session.pk, callIds: new Set(callIds), owners } }
      : {};
  if (sessionHeader !== undefined && !named)
    return { kind: 'create', id: sessionHeader, conversationKey: key, divergedFrom: null };
  if (!match) {
    if (!named) return { kind: 'create', id: null, conversationKey: null, divergedFrom: null };
    // The header's session without a chain (created by the API, or its first request failed
    // before linking) takes the request; one with a chain that shares nothing is left.
    if (!(await lastConversationLink(db, named.pk)))
      return {
        kind: 'extend',
        session: named,
        conversationKey: key,
        from: 0,
        echoAt: null,
        clearAnswerAt: null,
        ...prefetched(named),
      };
    return { kind: 'create', id: null, conversationKey: key, divergedFrom: named };
  }
  // The header's session is read already: the chain usually leads back to it.
  const session = named?.pk === match.sessionPk ? named : await findSessionByPk(db, match.sessionPk);
  const last = match.end;
  // Links go with their session: a session deleted since the lookup is a conversation unknown.
  if (!session) return { kind: 'create', id: null, conversationKey: key, divergedFrom: null };
  const conversationKey = key ?? dropInMetadataOf(session, protocol).conversationKey;
  const matched = match.position;
  const storedEnd = last.position;
  const keptAnswer = last.answer && last.rawAnswer !== null ? storedEnd : null;
  if (matched === storedEnd) {
    return {
      kind: 'extend',
      session,
      conversationKey,
      from: matched + 1,
      echoAt: null,
      clearAnswerAt: elements.length > storedEnd + 1 ? keptAnswer : null,
      ...prefetched(session),
    };
  }
  if (matched === storedEnd - 1 && last.answer) {
    if (elements.length === storedEnd) {
      const fresh = deps.resources.clock().getTime() - last.createdAt.getTime() <= REPLAY_WINDOW_MS;
      if (fresh && last.rawAnswer !== null)
        return { kind: 'replay', session, conversationKey, position: storedEnd, raw: last.rawAnswer };
    } else if (await echoesStoredAnswer(deps, session, last, elements[storedEnd]!)) {
      return {
        kind: 'extend',
        session,
        conversationKey,
        from: storedEnd + 1,
        echoAt: storedEnd,
        clearAnswerAt: keptAnswer,
        ...prefetched(session),
      };
    }
  }
  return { kind: 'create', id: null, conversationKey, divergedFrom: session };
}

/** Tool call owners read ahead for `callIds` in the session of `sessionPk` (absent: not stored). */
export interface PrefetchedOwners {
  sessionPk: number;
  callIds: ReadonlySet<string>;
  owners: Map<string, ToolCallOwner>;
}

/** The call ids of the tool results after the request's last assistant message. */
function trailingResultCallIds(elements: readonly ConversationElement[]): string[] {
  const ids: string[] = [];
  for (let i = elements.length - 1; i >= 0 && elements[i]!.role !== 'assistant'; i--)
    for (const result of elements[i]!.toolResults) ids.push(result.callId);
  return [...new Set(ids)];
}

/**
 * Whether the client's message is its rendering of the stored answer: an assistant message with
 * the same tool call ids, or, without calls, the same text once trimmed.
 */
async function echoesStoredAnswer(
  deps: GatewayDeps,
  session: SessionRow,
  link: ConversationLinkRow,
  element: ConversationElement,
): Promise<boolean> {
  const echo = element.message;
  if (element.role !== 'assistant' || echo === null || link.messageId === null) return false;
  const stored = await findMessage(deps.resources.db, session.pk, link.messageId);
  if (!stored) return false;
  const storedParts = (await listPartsOfMessages(deps.resources.db, [stored.pk])).map(partFromRow);
  const callIds = (parts: readonly { type: string; callId?: string }[]) =>
    parts.flatMap((p) => (p.type === 'tool' && p.callId !== undefined ? [p.callId] : []));
  const texts = (parts: readonly { type: string; text?: string }[]) =>
    parts
      .flatMap((p) => (p.type === 'text' && p.text !== undefined ? [p.text] : []))
      .join('')
      .trim();
  const storedCalls = callIds(storedParts);
  if (storedCalls.length > 0) return sameList(storedCalls, callIds(echo.parts));
  return callIds(echo.parts).length === 0 && texts(storedParts) === texts(echo.parts);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}
