import {
  buildTopicDetectionRequest,
  estimateTokens,
  mapBoundaryToSession,
  planTopicCompaction,
} from '@compactor/core';
import { assistant, conversation, user } from '@compactor/core/testing';
import { describe, expect, it } from 'vitest';
import { LlmOverflowError, LlmRetryableError } from './errors';
import { createLlm } from './llm';
import { stubConfig, useLlmStub } from './test-support/stub';

const stub = useLlmStub();

const messages = conversation([
  user('Fix the regex bug in parser.py.'),
  assistant('Fixed: the group was greedy.'),
  user("Thanks. Now let's work on the API endpoint in routes.py."),
  assistant('Looking at routes.py.'),
]);
// A verbatim window of 20 tokens keeps the last exchange (one exchange kept at least, as the plan
// below): the detector summarises [0] and [1].
const detection = buildTopicDetectionRequest(messages, { verbatimWindowTokens: 20, minVerbatimExchanges: 1 });

function detect(
  headers: Record<string, string> = {},
  contextWindow: number | null = null,
  maxOutputTokens = 600,
) {
  return createLlm(
    stubConfig(stub(), { defaultHeaders: headers, countTokens: estimateTokens }),
  ).detectTopicBoundary({
    prompt: detection,
    model: 'gpt-4o-mini',
    maxOutputTokens,
    timeoutMs: 10_000,
    contextWindow,
  });
}

describe('detectTopicBoundary', () => {
  it('finds the boundary and parses the answer with core', async () => {
    const result = await detect();
    expect(result.boundary).toMatchObject({ boundaryIndex: 2, confidence: 0.9 });
    expect(result.boundary.summary).toContain('Fix the regex bug in parser.py.');
    expect(mapBoundaryToSession(result.boundary.boundaryIndex, detection.window)).toBe(2);
    expect(result.usage.promptTokens).toBeGreaterThan(0);
    expect(result.costUsd).toBeGreaterThan(0);
    expect(result.truncated).toBe(false);
  });

  it('an answer cut off at the output limit is flagged, and never becomes "no boundary, just drop"', async () => {
    const result = await detect({}, null, 20);
    expect(result.truncated).toBe(true);
    expect(result.boundary).toMatchObject({ boundaryIndex: null, summary: '' });
    const plan = planTopicCompaction({
      messages,
      boundary: result.boundary,
      window: detection.window,
      triggerTokens: 10,
      verbatimWindowTokens: 20,
      minVerbatimExchanges: 1,
      summaryFrom: 'detector',
    });
    // Summarize, with the summary written by the normal summarizer.
    expect(plan).toMatchObject({ case: 'summarize', keepFrom: 2, needsSummarizer: true, summaryText: null });
  });

  it.each(['empty', 'echo', 'tool-call', 'malformed'])(
    'an unusable answer (%s) means no boundary, or a retryable error',
    async (output) => {
      const outcome = await detect({ 'x-stub-output': output }).catch((e: unknown) => e);
      if (output === 'malformed') {
        expect(outcome).toBeInstanceOf(LlmRetryableError);
      } else {
        expect(outcome).toMatchObject({ boundary: { boundaryIndex: null, confidence: 0, summary: '' } });
      }
    },
  );

  it('refuses a prompt larger than a known window without sending it', async () => {
    const before = stub().stats.requests;
    await expect(detect({}, 700)).rejects.toBeInstanceOf(LlmOverflowError);
    expect(stub().stats.requests).toBe(before);
  });
});
