/**
 * The conversation store's test plumbing: gateway deps over a test file's real sessions (Postgres,
 * Redis) with a clock the test moves, Chat Completions requests and answers as an agent sends
 * and receives them, and the stored history read back.
 */
import { openAIAnswer, openAIChatElements } from '@compactor/core';
import { historyPage } from '@compactor/sessions';
import type { TestSessions } from '@compactor/sessions/testing';
import type { ConversationRequest, GatewayDeps, SyncedConversation } from '../conversation';
import { recordAnswer, syncConversation } from '../conversation';

/** Deps over the file's sessions whose clock reads `clock.now`. */
export function conversationDeps(t: TestSessions, clock: { now: Date }): GatewayDeps {
  return {
    get resources() {
      return { ...t.resources, clock: () => clock.now };
    },
    get messages() {
      return t.messages;
    },
    get limits() {
      return t.limits;
    },
    log: t.log,
  };
}

export type ChatMessage = Record<string, unknown>;

export const system = (content: string): ChatMessage => ({ role: 'system', content });
export const user = (content: string): ChatMessage => ({ role: 'user', content });
export const toolResult = (id: string, content: string): ChatMessage => ({
  role: 'tool',
  tool_call_id: id,
  content,
});
/** An assistant message calling `bash` with `command` as call `id`. */
export const toolCall = (id: string, command: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } }],
});
export const reply = (content: string): ChatMessage => ({ role: 'assistant', content });

/** A Chat completion answering with `message`. */
export function completion(message: ChatMessage): Record<string, unknown> {
  const calls = Array.isArray(message['tool_calls']);
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    created: 0,
    model: 'gpt-4o',
    choices: [{ index: 0, message, finish_reason: calls ? 'tool_calls' : 'stop', logprobs: null }],
    usage: { prompt_tokens: 120, completion_tokens: 12, total_tokens: 132 },
  };
}

export function chatRequest(
  tenantId: string,
  messages: ChatMessage[],
  options: { header?: string; overrides?: ConversationRequest['overrides'] } = {},
): ConversationRequest {
  return {
    tenantId,
    protocol: 'openai',
    sessionHeader: options.header,
    model: 'gpt-4o',
    overrides: options.overrides ?? { contextWindow: 8_000 },
    elements: openAIChatElements(messages),
  };
}

/** Syncs a request and stores `answer` as the upstream's answer to it. */
export async function turn(
  deps: GatewayDeps,
  request: ConversationRequest,
  answer: ChatMessage,
): Promise<SyncedConversation> {
  const conversation = await syncConversation(deps, request);
  const body = completion(answer);
  await recordAnswer(deps, conversation, openAIAnswer(body), { protocol: 'openai', body });
  return conversation;
}

/** The session's stored messages, oldest first (role, text, tool parts). */
export async function storedMessages(t: TestSessions, tenantId: string, id: string) {
  const page = await historyPage(t.database.db, { tenantId, id }, { afterSeq: 0, limit: 1000 });
  return page.messages.map((m) => ({
    id: m.id,
    role: m.role,
    parts: m.parts.map((p) =>
      p.type === 'text'
        ? { type: 'text', text: p.text }
        : p.type === 'tool'
          ? { type: 'tool', callId: p.callId, status: p.status, output: p.output }
          : { type: p.type },
    ),
  }));
}
