import { buildTopicDetectionRequest, parseTopicBoundary } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { detectTopicBoundary } from './topic-detector';
import { assistant, user } from './test-support/messages';
import { parseIndexedMessages } from './transcript';

/** The stub's answer to core's detection request for a conversation of alternating turns. */
function answerFor(userTexts: string[]) {
  const messages = userTexts.flatMap((text, i) => [user(text), assistant(`Reply ${i}.`)]);
  const request = buildTopicDetectionRequest(messages);
  return detectTopicBoundary(parseIndexedMessages(request.user));
}

describe('detectTopicBoundary answers from cues', () => {
  it.each([
    ['an explicit switch', ['Fix the parser bug.', "Now let's work on the API endpoint."], 2, 0.9],
    ['"moving on"', ['Fix the parser bug.', 'Thanks.', 'Moving on to the docs.'], 4, 0.9],
    ['a context reset is less certain', ['Fix the parser bug.', 'Actually, rewrite it in Rust.'], 2, 0.6],
    ['the most recent cue wins', ['Fix it.', "Now let's do the API.", 'Moving on to the docs.'], 4, 0.9],
    ['no cue, no boundary', ['Fix the parser bug.', 'It still fails on empty input.'], null, 0],
    ['the first message cannot start a new topic', ["Now let's start with the parser."], null, 0],
  ])('%s', (_name, userTexts, index, confidence) => {
    const answer = answerFor(userTexts);
    expect(answer.boundary_index).toBe(index);
    expect(answer.confidence).toBe(confidence);
  });

  it('summarises the old topic, and core parses the JSON back', () => {
    const answer = answerFor(['Fix the parser bug in parser.py.', "Now let's work on routes.py."]);
    expect(answer.summary).toContain('Fix the parser bug in parser.py.');
    expect(parseTopicBoundary(JSON.stringify(answer))).toEqual({
      boundaryIndex: 2,
      boundaryReason: answer.boundary_reason,
      confidence: 0.9,
      summary: answer.summary,
    });
  });
});
