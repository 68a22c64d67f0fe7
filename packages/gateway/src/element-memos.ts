/**
 * The elements of each conversation's latest request, kept in this process so that its next
 * request canonicalises and hashes only the messages it adds (core's `chainElementsReusing`).
 * Only a cache of a pure function: a request whose conversation is not here, or whose history
 * differs from what is kept, is computed as it would be without it, so forgetting (a restart,
 * another replica, eviction) costs time, never a different answer.
 */
import {
  anthropicMessageDraft,
  anthropicSystemDraft,
  chainElementsReusing,
  openAIChatElements,
  openAIMessageDraft,
  anthropicElements,
  type ConversationElement,
  type ElementMemo,
} from '@compactor/core';
import { headerValue, SESSION_HEADER, type RequestHeaders } from './request-headers';

/** What the memos may hold together, in characters of the kept requests' JSON (~2 bytes each at most). */
export const ELEMENT_MEMO_BUDGET = 48 * 1024 * 1024;

/** A conversation's memo is kept only below this share of the budget. */
const LARGEST_SHARE = 4;

/**
 * The memos, newest last (a Map keeps insertion order), dropped oldest first past the budget.
 * Keyed by tenant, protocol, session header and the chain hash of the request's first two
 * elements: conversations that share a header or an opening still find their own most of the
 * time, and a miss only computes everything.
 */
export class ElementMemos {
  private readonly memos = new Map<string, ElementMemo>();
  private held = 0;

  constructor(private readonly budget = ELEMENT_MEMO_BUDGET) {}

  /** Chat Completions `messages` as elements (core's `openAIChatElements`, reusing the memo). */
  openAI(scope: MemoScope, messages: unknown): ConversationElement[] {
    if (!Array.isArray(messages) || messages.length === 0) return openAIChatElements(messages);
    const key = this.keyOf(scope, 'openai', openAIChatElements(messages.slice(0, 2)));
    return this.run(key, messages, (message, index) =>
      openAIMessageDraft(message, ['messages', index], index),
    );
  }

  /** Messages `system` + `messages` as elements (core's `anthropicElements`, reusing the memo). */
  anthropic(scope: MemoScope, system: unknown, messages: unknown): ConversationElement[] {
    if (!Array.isArray(messages) || messages.length === 0) return anthropicElements(system, messages);
    const systemDraft = anthropicSystemDraft(system);
    const offset = systemDraft === null ? 0 : 1;
    const head = anthropicElements(system, messages.slice(0, 1));
    const key = this.keyOf(scope, offset === 0 ? 'anthropic' : 'anthropic+system', head);
    const inputs = offset === 0 ? messages : [system, ...messages];
    return this.run(key, inputs, (input, index) =>
      index < offset ? systemDraft! : anthropicMessageDraft(input, ['messages', index - offset]),
    );
  }

  /** Characters held (for tests). */
  get size(): number {
    return this.held;
  }

  private keyOf(scope: MemoScope, shape: string, head: ConversationElement[]): string {
    return JSON.stringify([scope.tenantId, shape, scope.sessionHeader ?? null, head.at(-1)?.hash ?? '']);
  }

  private run(
    key: string,
    inputs: unknown[],
    draftOf: Parameters<typeof chainElementsReusing>[1],
  ): ConversationElement[] {
    const previous = this.memos.get(key) ?? null;
    const { elements, memo } = chainElementsReusing(inputs, draftOf, previous);
    if (previous !== null) {
      this.memos.delete(key);
      this.held -= weightOf(previous);
    }
    const weight = weightOf(memo);
    if (weight * LARGEST_SHARE <= this.budget) {
      this.memos.set(key, memo);
      this.held += weight;
      for (const [oldest, kept] of this.memos) {
        if (this.held <= this.budget) break;
        this.memos.delete(oldest);
        this.held -= weightOf(kept);
      }
    }
    return elements;
  }
}

/** Which conversation a request belongs to, as far as the memo knows before it is resolved. */
export interface MemoScope {
  tenantId: string;
  /** `X-Compactor-Session` as sent (checked later, by the conversation store). */
  sessionHeader: string | undefined;
}

/** A request's {@link MemoScope}. */
export function memoScope(request: { tenantId: string; headers: RequestHeaders }): MemoScope {
  return { tenantId: request.tenantId, sessionHeader: headerValue(request.headers, SESSION_HEADER) };
}

const weightOf = (memo: ElementMemo) => memo.weights.at(-1) ?? 0;

/** The process's memos (one per process: the cache is of a pure function, shared by every server in it). */
export const elementMemos = new ElementMemos();
