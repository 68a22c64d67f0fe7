/**
 * Checks that a context is one a provider accepts: the failures users report after a bad cut
 * (orphaned tool results, dangling tool calls → provider 400 and a stuck session).
 * Used by the property tests and by the API's tests on every context it serves.
 */
import type { Message } from './model';
import type { OpenAIChatMessage } from './openai-format';

/** What the validators report: each kind makes a provider reject the request or breaks the boundary rule. */
export type ContextIssueKind =
  /** A tool result that answers no tool call of the assistant message right before it. */
  | 'orphaned-tool-result'
  /** A tool call with no result: unanswered in the OpenAI format, pending or running natively. */
  | 'dangling-tool-call'
  /** Two tool calls with the same id. */
  | 'duplicate-call-id'
  /** The first non-system message is a tool result. */
  | 'starts-with-tool-result'
  /**
   * A compaction's summary message after a non-summary message (the summary must come first;
   * only system messages, e.g. pinned instructions, may precede it).
   */
  | 'summary-not-first'
  /** `function.arguments` that is not the JSON text of an object. */
  | 'invalid-tool-arguments'
  /** A message with no content (and no tool calls). */
  | 'empty-message';

/** One problem in a context; `callId` is set for the kinds that concern a tool call. */
export interface ContextIssue {
  kind: ContextIssueKind;
  /** Index of the offending message. */
  index: number;
  callId?: string;
}

/**
 * Issues of a native context. Tool results live on their call's part here, so orphaned results
 * and a leading tool result cannot occur; what can go wrong is a call without result, a reused
 * call id (some providers number calls per turn; `toOpenAIMessages` renders such ids
 * unique, a client rendering the native format itself must too), and a summary placed after the
 * messages it precedes. System messages before the summary are fine: the context view puts
 * pinned instructions there.
 */
export function validateNativeContext(messages: readonly Message[]): ContextIssue[] {
  const issues: ContextIssue[] = [];
  const seen = new Set<string>();
  let sawOrdinary = false;
  messages.forEach((message, index) => {
    if (message.summary && sawOrdinary) issues.push({ kind: 'summary-not-first', index });
    if (!message.summary && message.role !== 'system') sawOrdinary = true;
    for (const part of message.parts) {
      if (part.type !== 'tool') continue;
      if (seen.has(part.callId)) issues.push({ kind: 'duplicate-call-id', index, callId: part.callId });
      seen.add(part.callId);
      if (part.status === 'pending' || part.status === 'running') {
        issues.push({ kind: 'dangling-tool-call', index, callId: part.callId });
      }
    }
  });
  return issues;
}

function isObjectJson(text: string): boolean {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

function isEmptyContent(content: string | readonly unknown[] | null): boolean {
  return content === null || content.length === 0 || (typeof content === 'string' && content.trim() === '');
}

/**
 * Issues of a Chat Completions `messages` array: every `tool` message must answer a `tool_calls`
 * entry of the assistant message right before it (other tool messages may sit in between), every
 * call must be answered before the next non-tool message, ids are unique, arguments are JSON
 * objects, and no message is empty.
 */
export function validateOpenAIMessages(messages: readonly OpenAIChatMessage[]): ContextIssue[] {
  const issues: ContextIssue[] = [];
  const seenCallIds = new Set<string>();
  let unanswered = new Map<string, number>();
  let afterAssistantWithCalls = false;
  const reportUnanswered = (): void => {
    for (const [callId, index] of unanswered) issues.push({ kind: 'dangling-tool-call', index, callId });
    unanswered = new Map();
  };

  const firstConversational = messages.findIndex((message) => message.role !== 'system');
  if (firstConversational >= 0 && messages[firstConversational]?.role === 'tool') {
    issues.push({ kind: 'starts-with-tool-result', index: firstConversational });
  }

  messages.forEach((message, index) => {
    if (message.role === 'tool') {
      if (afterAssistantWithCalls && unanswered.has(message.tool_call_id)) {
        unanswered.delete(message.tool_call_id);
      } else {
        issues.push({ kind: 'orphaned-tool-result', index, callId: message.tool_call_id });
      }
      return;
    }
    reportUnanswered();
    afterAssistantWithCalls = false;
    if (message.role !== 'assistant') {
      if (isEmptyContent(message.content)) issues.push({ kind: 'empty-message', index });
      return;
    }
    const calls = message.tool_calls ?? [];
    if (calls.length === 0 && isEmptyContent(message.content)) issues.push({ kind: 'empty-message', index });
    for (const call of calls) {
      if (seenCallIds.has(call.id)) issues.push({ kind: 'duplicate-call-id', index, callId: call.id });
      seenCallIds.add(call.id);
      if (!isObjectJson(call.function.arguments)) {
        issues.push({ kind: 'invalid-tool-arguments', index, callId: call.id });
      }
      unanswered.set(call.id, index);
    }
    afterAssistantWithCalls = calls.length > 0;
  });
  reportUnanswered();
  return issues;
}

function isNativeContext(
  messages: readonly Message[] | readonly OpenAIChatMessage[],
): messages is readonly Message[] {
  return messages.every((message) => 'parts' in message);
}

/**
 * Issues of a context in either format: native messages (with `parts`) or Chat Completions
 * messages. An empty list is valid.
 */
export function validateContext(messages: readonly Message[] | readonly OpenAIChatMessage[]): ContextIssue[] {
  return isNativeContext(messages) ? validateNativeContext(messages) : validateOpenAIMessages(messages);
}
