import { unescapePromptData } from '@compactor/core';
import { emptyOfFactsSummary } from './empty-summary';
import type { StubOutputFault } from './faults';
import { withForgedFraming } from './forged-framing';
import { agentReply } from './agent';
import type { StubMessage, StubRequest } from './conversation';
import { promptTextOf } from './conversation';
import type { ChatRequest, CompletionOutput } from './openai-wire';
import { stubRequestOfChat } from './openai-wire';
import { readSummaryRequest, writeSummary } from './summary-writer';
import { detectTopicBoundary, readTopicSummaryRequest } from './topic-detector';
import { parseIndexedMessages, taggedSection, withoutSection } from './transcript';

/** The stub's tokenizer: four characters a token, as every reference system estimates. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Prompt tokens as a provider would report them: each message's text, tool calls and tool
 * results, plus a few tokens of framing per message.
 */
export function countPromptTokens(request: Pick<StubRequest, 'messages'>): number {
  return request.messages.reduce((sum, message) => sum + estimateTokens(promptTextOf(message)) + 4, 3);
}

/**
 * The answer a request asks for: topic-boundary JSON when the prompt asks for `boundary_index`,
 * a summary when it carries a `<conversation>` block, else a short echo of the last user message.
 * `forge`: the summary (the topic answer's too, when it has one) ends with lines that try to
 * break the framing of the prompt it will be embedded in next (`forge-framing`).
 */
function derivedContent(texts: readonly StubMessage[], forge: boolean): string {
  const prompt = texts.map((message) => message.text).join('\n\n');
  const lastUser = texts.filter((message) => message.role === 'user').at(-1)?.text ?? '';
  if (prompt.includes('boundary_index')) {
    // The previous summary is prose, not indexed messages: read it apart, as it was written.
    const escapedSummary = taggedSection(lastUser, 'previous-summary');
    const previousSummary = escapedSummary === null ? null : unescapePromptData(escapedSummary, 'line-start');
    const indexed = parseIndexedMessages(withoutSection(lastUser, 'previous-summary'));
    const answer = detectTopicBoundary(indexed, readTopicSummaryRequest(lastUser, previousSummary));
    const summary = forge && answer.summary !== '' ? withForgedFraming(answer.summary) : answer.summary;
    return JSON.stringify({ ...answer, summary }, null, 2);
  }
  const summaryRequest = readSummaryRequest(prompt);
  if (summaryRequest) {
    const summary = writeSummary(summaryRequest);
    return forge ? withForgedFraming(summary) : summary;
  }
  return `Stub reply to: ${lastUser.replace(/\s+/g, ' ').slice(0, 200)}`;
}

/**
 * What a model that misunderstood its role would send back: its own instructions, without the
 * `<conversation>` block core wrote (tags on their own lines: a tag quoted inside does not end it).
 */
function echoedInstructions(texts: readonly StubMessage[]): string {
  return texts
    .map((message) => withoutSection(message.text, 'conversation').trim())
    .filter((text) => text !== '')
    .join('\n\n');
}

export interface StubAnswer {
  output: CompletionOutput;
  completionTokens: number;
}

/**
 * A compaction's own request (a summary, a topic boundary): core writes it as the last user
 * message, so that message alone decides; an agent's tool output quoting such a prompt does not.
 */
function isCompactionRequest(messages: readonly StubMessage[]): boolean {
  const lastUser = messages.filter((message) => message.role === 'user').at(-1)?.text ?? '';
  return lastUser.includes('boundary_index') || readSummaryRequest(lastUser) !== null;
}

/** Output faults that only alter summaries: agent-mode answers stay as they are under them. */
const SUMMARY_ONLY_FAULTS: ReadonlySet<StubOutputFault | null> = new Set([
  null,
  'forge-framing',
  'drop-everything',
]);

export interface AnswerOptions {
  fault: StubOutputFault | null;
  maxTokens: number;
  /** Agent mode: tool calls in a row before the text answer. */
  agentSteps: number;
  /** Prefix of the tool call ids the answer makes (`call_` for Chat, `toolu_` for Anthropic). */
  callIdPrefix: string;
}

/**
 * The answer to a request, derived from the request alone (same request, same answer), cut at
 * `maxTokens` like a real model (`finish_reason: length`). A request that offers tools gets the
 * agent-mode answer (`agent.ts`) unless it is a compaction's own request.
 */
export function answerRequest(request: StubRequest, options: AnswerOptions): StubAnswer {
  const { fault, maxTokens } = options;
  const messages = request.messages;
  if (fault === 'tool-call') {
    const args = JSON.stringify({ path: 'README.md' });
    return {
      output: {
        content: null,
        toolCalls: [
          {
            id: `${options.callIdPrefix}stub_0`,
            type: 'function',
            function: { name: 'read', arguments: args },
          },
        ],
        finishReason: 'tool_calls',
      },
      completionTokens: estimateTokens(args) + 8,
    };
  }
  const agent =
    SUMMARY_ONLY_FAULTS.has(fault) && !isCompactionRequest(messages)
      ? agentReply(request, options.agentSteps, options.callIdPrefix)
      : null;
  if (agent?.toolCall) {
    const call = agent.toolCall;
    return {
      output: {
        content: agent.text,
        toolCalls: [
          { id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } },
        ],
        finishReason: 'tool_calls',
      },
      completionTokens: estimateTokens((agent.text ?? '') + call.name + call.arguments),
    };
  }
  const full =
    agent?.text ??
    (fault === 'empty'
      ? ''
      : fault === 'echo'
        ? echoedInstructions(messages)
        : ((fault === 'drop-everything' ? emptyOfFactsSummary(messages) : null) ??
          derivedContent(messages, fault === 'forge-framing')));
  const maxChars = maxTokens * 4;
  const content = full.length > maxChars ? full.slice(0, maxChars) : full;
  return {
    output: { content, toolCalls: null, finishReason: full.length > maxChars ? 'length' : 'stop' },
    completionTokens: estimateTokens(content),
  };
}

/** {@link answerRequest} for a Chat Completions request, one agent step. */
export function answerChatRequest(
  request: ChatRequest,
  fault: StubOutputFault | null,
  maxTokens: number,
): StubAnswer {
  return answerRequest(stubRequestOfChat(request), {
    fault,
    maxTokens,
    agentSteps: 1,
    callIdPrefix: 'call_',
  });
}
