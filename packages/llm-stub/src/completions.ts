import { unescapePromptData } from '@compactor/core';
import { emptyOfFactsSummary } from './empty-summary';
import type { StubOutputFault } from './faults';
import { withForgedFraming } from './forged-framing';
import type { ChatRequest, CompletionOutput } from './openai-wire';
import { messageTexts } from './openai-wire';
import { readSummaryRequest, writeSummary } from './summary-writer';
import { detectTopicBoundary, readTopicSummaryRequest } from './topic-detector';
import { parseIndexedMessages, taggedSection, withoutSection } from './transcript';

/** The stub's tokenizer: four characters a token, as every reference system estimates. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Prompt tokens as a provider would report them: content plus a few tokens of framing per message. */
export function countPromptTokens(request: ChatRequest): number {
  return messageTexts(request).reduce((sum, message) => sum + estimateTokens(message.text) + 4, 3);
}

/**
 * The answer a request asks for: topic-boundary JSON when the prompt asks for `boundary_index`,
 * a summary when it carries a `<conversation>` block, else a short echo of the last user message.
 * `forge`: the summary (the topic answer's too, when it has one) ends with lines that try to
 * break the framing of the prompt it will be embedded in next (`forge-framing`).
 */
function derivedContent(request: ChatRequest, forge: boolean): string {
  const texts = messageTexts(request);
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
function echoedInstructions(request: ChatRequest): string {
  return messageTexts(request)
    .map((message) => withoutSection(message.text, 'conversation').trim())
    .filter((text) => text !== '')
    .join('\n\n');
}

export interface StubAnswer {
  output: CompletionOutput;
  completionTokens: number;
}

/**
 * The answer to a chat request, derived from the request alone (same request, same answer),
 * cut at `maxTokens` like a real model (`finish_reason: length`).
 */
export function answerChatRequest(
  request: ChatRequest,
  fault: StubOutputFault | null,
  maxTokens: number,
): StubAnswer {
  if (fault === 'tool-call') {
    const args = JSON.stringify({ path: 'README.md' });
    return {
      output: {
        content: null,
        toolCalls: [{ id: 'call_stub_0', type: 'function', function: { name: 'read', arguments: args } }],
        finishReason: 'tool_calls',
      },
      completionTokens: estimateTokens(args) + 8,
    };
  }
  const full =
    fault === 'empty'
      ? ''
      : fault === 'echo'
        ? echoedInstructions(request)
        : ((fault === 'drop-everything' ? emptyOfFactsSummary(request) : null) ??
          derivedContent(request, fault === 'forge-framing'));
  const maxChars = maxTokens * 4;
  const content = full.length > maxChars ? full.slice(0, maxChars) : full;
  return {
    output: { content, toolCalls: null, finishReason: full.length > maxChars ? 'length' : 'stop' },
    completionTokens: estimateTokens(content),
  };
}
