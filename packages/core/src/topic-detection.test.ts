import { describe, expect, it } from 'vitest';
import type { Part } from './model';
import {
  buildTopicDetectionRequest,
  formatTopicMessage,
  mapBoundaryToSession,
  NO_TOPIC_BOUNDARY,
  parseTopicBoundary,
  TOPIC_ANSWER_OVERHEAD_TOKENS,
  topicDetectionOutputTokens,
  topicDetectionSystemPrompt,
} from './topic-detection';
import { DEFAULT_POLICY } from './policy';
import { buildSummaryMessages } from './summary-messages';
import { message, text, toolPart } from './test-support/builders';

/** The reference's example conversation. */
const seedExample = [
  message(0, 'user', [text('Can you fix the bug in parser.py...')]),
  message(1, 'assistant', [text('I see the issue, the regex...')]),
  message(2, 'user', [text("Now let's work on the API endpoint...")]),
  message(3, 'assistant', [text('Sure, looking at routes.py...')]),
];

describe('buildTopicDetectionRequest', () => {
  it("formats the reference's example as indexed blocks", () => {
    const request = buildTopicDetectionRequest(seedExample);
    expect(request.window).toEqual({ start: 0, size: 4, summaryEnd: null });
    expect(request.user).toContain(
      [
        '[0] USER: Can you fix the bug in parser.py...',
        '[1] ASSISTANT: I see the issue, the regex...',
        "[2] USER: Now let's work on the API endpoint...",
        '[3] ASSISTANT: Sure, looking at routes.py...',
      ].join('\n\n'),
    );
  });

  it('sends at most the newest 50 messages, indexed from 0, and remembers where the window starts', () => {
    const messages = Array.from({ length: 60 }, (_, i) =>
      message(i, i % 2 === 0 ? 'user' : 'assistant', [text(`message ${i}`)]),
    );
    const request = buildTopicDetectionRequest(messages);
    expect(request.window).toEqual({ start: 10, size: 50, summaryEnd: null });
    expect(request.user).toContain('[0] USER: message 10');
    expect(request.user).toContain('[49] ASSISTANT: message 59');
    expect(request.user).not.toContain('message 9\n');
    expect(buildTopicDetectionRequest(messages, { maxMessages: 5 }).window).toMatchObject({
      start: 55,
      size: 5,
    });
  });

  it('cuts messages longer than 1,000 characters', () => {
    const line = formatTopicMessage(
      message(1, 'user', [text('a'.repeat(1500))]),
      7,
      DEFAULT_POLICY.topic.maxCharsPerMessage,
    );
    expect(line).toBe(`[7] USER: ${'a'.repeat(1000)}...`);
    expect(formatTopicMessage(message(1, 'user', [text('a'.repeat(1000))]), 0, 1000)).toBe(
      `[0] USER: ${'a'.repeat(1000)}`,
    );
  });

  it('flattens structured content to text and drops reasoning', () => {
    const line = formatTopicMessage(
      message(1, 'assistant', [
        { type: 'reasoning', text: 'hidden', tokens: 1 },
        text('Here is the chart'),
        { type: 'file', mime: 'image/png', filename: 'chart.png', url: 'https://x/chart.png', tokens: 1 },
        { type: 'file', mime: 'application/pdf', filename: null, url: 'https://x/doc', tokens: 1 },
        toolPart('read', 1, { callId: 'c', input: { path: 'a.ts' }, output: 'x', tokens: 1 }),
        { type: 'compaction', auto: true, tokens: 1 },
      ]),
      3,
      1000,
    );
    expect(line).toBe(
      '[3] ASSISTANT: Here is the chart\n[image: chart.png]\n[file: application/pdf]\n[tool read({"path":"a.ts"})]\n[compaction requested]',
    );
  });

  it("the skill prompt asks for the reference's JSON with its cues", () => {
    const prompt = buildTopicDetectionRequest(seedExample, { summaryBudgetTokens: 300 }).system;
    for (const expected of [
      'boundary_index',
      'boundary_reason',
      'confidence',
      'summary',
      "now let's work on",
      'moving on to',
      'different file or component',
      'debugging -> feature development',
      'forget that',
      "let's try something else",
      'MIDDLE',
      'null',
      'about 300 tokens',
    ]) {
      expect(prompt).toContain(expected);
    }
    expect(topicDetectionSystemPrompt()).toContain('about 500 tokens');
  });

  it('asks for a summary of what summarize drops, boundary or not (never "empty if no boundary")', () => {
    const messages = Array.from({ length: 10 }, (_, i) =>
      message(i, i % 2 === 0 ? 'user' : 'assistant', [text(`message ${i}`, 500)]),
    );
    const request = buildTopicDetectionRequest(messages);
    // The verbatim window (3,000 tokens) holds the newest 6 messages: summarise [0] to [3].
    expect(request.window).toEqual({ start: 0, size: 10, summaryEnd: 4 });
    expect(request.user).toContain(
      'Summarize messages [0] to [3] in "summary"; messages from [4] on are kept verbatim.',
    );
    expect(request.system).toContain('whether or not you found a boundary');
    expect(request.system).not.toMatch(/empty string if there is no boundary/i);
  });

  it('asks for no summary when the summarizer writes it, or the detector cannot see what is dropped', () => {
    const messages = Array.from({ length: 10 }, (_, i) =>
      message(i, i % 2 === 0 ? 'user' : 'assistant', [text(`message ${i}`, 500)]),
    );
    const bySummarizer = buildTopicDetectionRequest(messages, { summaryFrom: 'summarizer' });
    expect(bySummarizer.window.summaryEnd).toBeNull();
    expect(bySummarizer.system).toContain('"summary": always an empty string');
    expect(bySummarizer.user).toContain('Leave "summary" empty.');
    const clipped = buildTopicDetectionRequest(messages, { maxMessages: 4 });
    expect(clipped.window).toEqual({ start: 6, size: 4, summaryEnd: null });
    expect(clipped.user).toContain('use an empty string for "summary"');
    // Everything fits the verbatim window: nothing to summarise.
    expect(buildTopicDetectionRequest(seedExample).window.summaryEnd).toBeNull();
  });

  it('gives the previous summary whole instead of cutting it to 1,000 characters', () => {
    const longSummary = `## Goal\nShip the exporter.\n\n## Critical Context\n${'- keep `--frozen-lockfile` on CI\n'.repeat(60)}- LAST FACT`;
    const previous = buildSummaryMessages({
      style: 'opencode',
      summaryText: longSummary,
      compactionId: 'c1',
      auto: true,
      messagesCompacted: 30,
      createdAt: '2025-01-01T00:00:00Z',
    }).map((m, i) => ({ ...m, seq: i }));
    const request = buildTopicDetectionRequest([...previous, ...seedExample]);
    expect(longSummary.length).toBeGreaterThan(1000);
    expect(request.user).toContain(`<previous-summary>\n${longSummary}\n</previous-summary>`);
    expect(request.user).toContain('LAST FACT');
    // The summary messages are not indexed: [0] is the first ordinary message.
    expect(request.window).toMatchObject({ start: 2, size: 4 });
    expect(request.user).toContain('[0] USER: Can you fix the bug in parser.py...');
  });
});

describe('parseTopicBoundary', () => {
  const seedAnswer = {
    boundary_index: 2,
    boundary_reason: 'User shifted from parser bug fix to API endpoint work',
    confidence: 0.85,
    summary: 'Fixed a regex bug in parser.py that was causing...',
  };
  const parsedSeedAnswer = {
    boundaryIndex: 2,
    boundaryReason: 'User shifted from parser bug fix to API endpoint work',
    confidence: 0.85,
    summary: 'Fixed a regex bug in parser.py that was causing...',
  };
  it.each([
    ["the reference's answer", JSON.stringify(seedAnswer), parsedSeedAnswer],
    ['fenced ```json', `\`\`\`json\n${JSON.stringify(seedAnswer, null, 2)}\n\`\`\``, parsedSeedAnswer],
    ['a bare fence', `\`\`\`\n${JSON.stringify(seedAnswer)}\n\`\`\``, parsedSeedAnswer],
    [
      'prose around it',
      `Here is my analysis: ${JSON.stringify(seedAnswer)} Hope this helps {really}.`,
      parsedSeedAnswer,
    ],
    [
      'braces inside strings',
      'Result: {"boundary_index": 1, "boundary_reason": "switch {to} \\"API\\"", "confidence": 0.7, "summary": ""}',
      { boundaryIndex: 1, boundaryReason: 'switch {to} "API"', confidence: 0.7, summary: '' },
    ],
    ['a non-JSON brace before the answer', `{not json} then ${JSON.stringify(seedAnswer)}`, parsedSeedAnswer],
    [
      'camelCase keys',
      '{"boundaryIndex": 4, "boundaryReason": "r", "confidence": 1, "summary": "s"}',
      { boundaryIndex: 4, boundaryReason: 'r', confidence: 1, summary: 's' },
    ],
    [
      'numbers as strings',
      '{"boundary_index": "3", "confidence": "0.6", "summary": "s"}',
      { boundaryIndex: 3, boundaryReason: '', confidence: 0.6, summary: 's' },
    ],
    [
      'an integral float index, a percentage',
      '{"boundary_index": 3.0, "confidence": "85%"}',
      { boundaryIndex: 3, boundaryReason: '', confidence: 0.85, summary: '' },
    ],
    [
      'confidence on a 0-100 scale',
      '{"boundary_index": 1, "confidence": 70}',
      { boundaryIndex: 1, boundaryReason: '', confidence: 0.7, summary: '' },
    ],
    [
      'null boundary',
      '{"boundary_index": null, "boundary_reason": "one topic", "confidence": 0.9, "summary": ""}',
      { boundaryIndex: null, boundaryReason: 'one topic', confidence: 0.9, summary: '' },
    ],
    [
      'a fractional index is rejected',
      '{"boundary_index": 2.5, "confidence": 0.9}',
      { boundaryIndex: null, boundaryReason: '', confidence: 0.9, summary: '' },
    ],
    [
      'a negative index is rejected',
      '{"boundary_index": -1, "confidence": 0.9}',
      { boundaryIndex: null, boundaryReason: '', confidence: 0.9, summary: '' },
    ],
    [
      'a boolean index is rejected',
      '{"boundary_index": true, "confidence": 0.9}',
      { boundaryIndex: null, boundaryReason: '', confidence: 0.9, summary: '' },
    ],
    [
      '"null" as a string',
      '{"boundary_index": "null", "confidence": 0.2}',
      { boundaryIndex: null, boundaryReason: '', confidence: 0.2, summary: '' },
    ],
    [
      'bad confidences become 0',
      '{"boundary_index": 1, "confidence": "high"}',
      { boundaryIndex: 1, boundaryReason: '', confidence: 0, summary: '' },
    ],
    [
      'a negative confidence',
      '{"boundary_index": 1, "confidence": -0.5}',
      { boundaryIndex: 1, boundaryReason: '', confidence: 0, summary: '' },
    ],
    [
      'an absurd confidence',
      '{"boundary_index": 1, "confidence": 5000}',
      { boundaryIndex: 1, boundaryReason: '', confidence: 0, summary: '' },
    ],
    [
      'a non-string summary is dropped',
      '{"boundary_index": 1, "confidence": 0.9, "summary": ["a", "b"], "boundary_reason": 7}',
      { boundaryIndex: 1, boundaryReason: '', confidence: 0.9, summary: '' },
    ],
    [
      'a stray closing brace after the answer',
      'x {"boundary_index": 2, "confidence": 0.8, "summary": "s"} }',
      { boundaryIndex: 2, boundaryReason: '', confidence: 0.8, summary: 's' },
    ],
  ])('%s', (_name, raw, expected) => {
    expect(parseTopicBoundary(raw)).toEqual(expected);
  });

  it.each([
    ['empty output', ''],
    ['prose only', 'I could not find a boundary.'],
    ['a JSON array', '[1, 2]'],
    ['broken JSON', '{"boundary_index": 2, "confidence": '],
    ['a JSON string', '"boundary 2"'],
  ])('falls back to the safe default on %s', (_name, raw) => {
    expect(parseTopicBoundary(raw)).toEqual(NO_TOPIC_BOUNDARY);
    expect(parseTopicBoundary(raw)).toEqual({
      boundaryIndex: null,
      boundaryReason: '',
      confidence: 0,
      summary: '',
    });
  });
});

describe('mapBoundaryToSession', () => {
  it.each([
    [2, { start: 0, size: 4 }, 2],
    [0, { start: 10, size: 50 }, 10],
    [49, { start: 10, size: 50 }, 59],
    [50, { start: 10, size: 50 }, null],
    [-1, { start: 10, size: 50 }, null],
    [null, { start: 10, size: 50 }, null],
  ])('%j in %j → %j', (index, window, expected) => {
    expect(mapBoundaryToSession(index, window)).toBe(expected);
  });
});

describe('data the types rule out', () => {
  it('throws on an unknown part type', () => {
    expect(() =>
      formatTopicMessage(message(1, 'user', [{ type: 'weird', tokens: 1 } as unknown as Part]), 0, 10),
    ).toThrow('unexpected part');
  });
});

describe('topicDetectionOutputTokens: the summary budget plus the JSON around it', () => {
  it.each<[number, number | null, number]>([
    [500, 16_384, 756],
    [500, null, 756],
    [4096, 4096, 4096],
    [500, 600, 600],
  ])('summary %i, model output %s → %i', (summary, modelMax, expected) => {
    expect(topicDetectionOutputTokens(summary, modelMax)).toBe(expected);
    expect(TOPIC_ANSWER_OVERHEAD_TOKENS).toBe(256);
  });
});
