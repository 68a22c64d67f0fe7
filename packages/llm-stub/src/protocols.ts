import type http from 'node:http';
import { writeAnthropicMessage } from './anthropic-stream';
import {
  anthropicContextErrorBody,
  anthropicErrorBody,
  anthropicRequestSchema,
  invalidThinking,
  stubRequestOfAnthropic,
} from './anthropic-wire';
import type { StubProtocol, StubRequest, ToolPairing } from './conversation';
import type { AnswerWrite } from './http-io';
import { writeCompletion } from './http-io';
import {
  chatRequestSchema,
  contextLengthErrorShape,
  errorBody,
  errorShapeForStatus,
  stubRequestOfChat,
} from './openai-wire';

/**
 * What differs between the two protocols the stub speaks: how a request is read, how errors are
 * worded and shaped, and how an answer is written. Everything else (faults, answers, records) is
 * shared, so every fault applies to both.
 */
export interface WireProtocol {
  name: StubProtocol;
  /** Prefix of the ids of the tool calls the stub makes. */
  callIdPrefix: string;
  /** Prefix of answer ids. */
  answerIdPrefix: string;
  parse(body: unknown): { request: StubRequest } | { invalid: string };
  /** An error body for this status; `message` replaces the provider's usual wording. */
  errorBody(status: number, message?: string): string;
  /** The provider's wording for tool calls and results that are not paired (a 400). */
  pairingMessage(pairing: ToolPairing): string;
  /** The provider's answer to a prompt over the window (always a 400). */
  contextErrorBody(window: number, promptTokens: number, maxTokens: number): string;
  write(res: http.ServerResponse, write: AnswerWrite): void;
}

export const OPENAI_PROTOCOL: WireProtocol = {
  name: 'openai',
  callIdPrefix: 'call_',
  answerIdPrefix: 'chatcmpl-stub-',
  parse(body) {
    const parsed = chatRequestSchema.safeParse(body);
    return parsed.success
      ? { request: stubRequestOfChat(parsed.data) }
      : { invalid: `Invalid request: ${parsed.error.message}` };
  },
  errorBody(status, message) {
    const shape = errorShapeForStatus(status);
    return errorBody(message === undefined ? shape : { ...shape, message, code: null });
  },
  pairingMessage({ unansweredCalls, orphanResults }) {
    return unansweredCalls.length > 0
      ? "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
          `'tool_call_id'. The following tool_call_ids did not have response messages: ${unansweredCalls.join(', ')}`
      : "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with " +
          `'tool_calls' (tool_call_id ${orphanResults.join(', ')}).`;
  },
  contextErrorBody(window, promptTokens, maxTokens) {
    return errorBody(contextLengthErrorShape(window, promptTokens, maxTokens));
  },
  write: writeCompletion,
};

export const ANTHROPIC_PROTOCOL: WireProtocol = {
  name: 'anthropic',
  callIdPrefix: 'toolu_',
  answerIdPrefix: 'msg_stub_',
  parse(body) {
    const parsed = anthropicRequestSchema.safeParse(body);
    if (!parsed.success) return { invalid: `Invalid request: ${parsed.error.message}` };
    const thinking = invalidThinking(parsed.data);
    return thinking === null ? { request: stubRequestOfAnthropic(parsed.data) } : { invalid: thinking };
  },
  errorBody: anthropicErrorBody,
  pairingMessage({ unansweredCalls, orphanResults }) {
    return unansweredCalls.length > 0
      ? `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unansweredCalls.join(', ')}. ` +
          'Each `tool_use` block must have a corresponding `tool_result` block in the next message.'
      : `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${orphanResults.join(', ')}. ` +
          'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.';
  },
  contextErrorBody: anthropicContextErrorBody,
  write: writeAnthropicMessage,
};
