import { describe, expect, it } from 'vitest';
import { renderToolPart } from './context';
import type { Part } from './model';
import { assistant, conversation, summary, text, toolPart, usage, user } from './test-support/builders';
import {
  estimateContextTokens,
  estimateTokens,
  latestSummarySeq,
  latestUsageReport,
  messageTokens,
  partTokens,
  promptTokens,
  INTERRUPTED_TOOL_RESULT_TOKENS,
  PRUNED_OUTPUT_PLACEHOLDER_TOKENS,
  reportedContextTokens,
  storedTokens,
  toolResultTokens,
} from './tokens';

describe('estimateTokens: OpenCode max(0, round(length / 4))', () => {
  it.each([
    ['empty', '', 0],
    ['null', null, 0],
    ['undefined', undefined, 0],
    ['1 char rounds down', 'a', 0],
    ['2 chars round half up', 'ab', 1],
    ['4 chars', 'abcd', 1],
    ['10 chars', 'x'.repeat(10), 3],
    ['4000 chars', 'x'.repeat(4000), 1000],
  ])('%s', (_name, input, expected) => {
    expect(estimateTokens(input)).toBe(expected);
  });

  it('the placeholder costs its estimate', () => {
    expect(PRUNED_OUTPUT_PLACEHOLDER_TOKENS).toBe(estimateTokens('[Old tool result content cleared]'));
  });
});

describe('partTokens and messageTokens: stored counts, placeholders for pruned outputs', () => {
  const pruned = toolPart('read', 3000, { tokens: 3020, compactedAt: '2025-01-02T00:00:00Z' });
  it.each<[string, Part, number]>([
    ['text', text('hello', 7), 7],
    ['reasoning', { type: 'reasoning', text: 'hmm', tokens: 12 }, 12],
    ['file', { type: 'file', mime: 'image/png', filename: null, url: 'u', tokens: 1200 }, 1200],
    ['compaction marker', { type: 'compaction', auto: true, tokens: 5 }, 5],
    ['tool part, shown', toolPart('read', 3000, { tokens: 3020 }), 3020],
    ['tool part, pruned: call + placeholder', pruned, 20 + PRUNED_OUTPUT_PLACEHOLDER_TOKENS],
    [
      'pruned part with inconsistent counts never goes negative',
      { ...pruned, tokens: 10 },
      PRUNED_OUTPUT_PLACEHOLDER_TOKENS,
    ],
    ['errored call', toolPart('bash', 0, { status: 'error', tokens: 40, error: 'boom' }), 40],
  ])('%s', (_name, part, expected) => {
    expect(partTokens(part)).toBe(expected);
  });

  it('counts a part rendered by the context view the same as the stored part', () => {
    for (const part of [pruned, toolPart('read', 3000, { tokens: 3020 })]) {
      expect(partTokens(renderToolPart(part))).toBe(partTokens(part));
    }
  });

  it('sums a message and a list of messages', () => {
    const message = assistant([text('a', 10), toolPart('read', 3000, { tokens: 3020 }), pruned]);
    expect(messageTokens(message)).toBe(10 + 3020 + 20 + PRUNED_OUTPUT_PLACEHOLDER_TOKENS);
    expect(storedTokens([message, user('q', 5)])).toBe(messageTokens(message) + 5);
    expect(storedTokens([])).toBe(0);
  });
});

describe('usage: what a report measures', () => {
  it.each([
    ["Opal's turn 3: prompt 19k, answer 1k", usage(19_000, 1000), 19_000, 20_000],
    [
      'cache reads and writes are part of the prompt',
      usage(2000, 500, { cacheRead: 90_000, cacheWrite: 8000 }),
      100_000,
      100_500,
    ],
    ['reasoning is not added again', usage(1000, 300, { reasoning: 200 }), 1000, 1300],
  ])('%s', (_name, report, prompt, context) => {
    expect(promptTokens(report)).toBe(prompt);
    expect(reportedContextTokens(report)).toBe(context);
  });

  it('tool results arrive after the report: completed, pruned, errored, still running', () => {
    const message = assistant([
      toolPart('read', 3000),
      toolPart('read', 5000, { compactedAt: '2025-01-02T00:00:00Z' }),
      toolPart('bash', 0, { status: 'error', error: 'x'.repeat(40) }),
      toolPart('bash', 0, { status: 'running' }),
      text('done', 2),
    ]);
    // The running call will be shown with the interrupted result.
    expect(toolResultTokens(message)).toBe(
      3000 + PRUNED_OUTPUT_PLACEHOLDER_TOKENS + 10 + INTERRUPTED_TOOL_RESULT_TOKENS,
    );
  });
});

describe('latestUsageReport', () => {
  it.each([
    [
      'the newest assistant with usage',
      conversation([
        user('q', 5),
        assistant('a', { usage: usage(100, 10) }),
        assistant('b', { usage: usage(200, 20) }),
      ]),
      3,
    ],
    [
      'skips a failed turn',
      conversation([
        assistant('a', { usage: usage(100, 10) }),
        assistant('b', { usage: usage(200, 0), error: { message: 'aborted' } }),
      ]),
      1,
    ],
    [
      'skips an empty report',
      conversation([assistant('a', { usage: usage(100, 10) }), assistant('b', { usage: usage(0, 0) })]),
      1,
    ],
    [
      'skips the summarizer call',
      conversation([
        assistant('a', { usage: usage(100, 10) }),
        summary('s', 50, { usage: usage(90_000, 800) }),
      ]),
      null,
    ],
    ['none in a fresh session', conversation([user('q', 5)]), null],
  ])('%s', (_name, view, expectedSeq) => {
    expect(latestUsageReport(view)?.message.seq ?? null).toBe(expectedSeq);
  });
});

describe('estimateContextTokens: the hybrid estimate (Opal)', () => {
  const fresh = conversation([user('hi', 120), assistant('hello', { tokens: 80 })]);

  it('without any report: the sum of stored counts', () => {
    expect(estimateContextTokens(fresh)).toEqual({ tokens: 200, source: 'stored', reportSeq: null });
  });

  it('calibrates on the last report and adds what came after it', () => {
    const view = conversation([
      user('q1', 100),
      assistant('a1', { tokens: 1000, usage: usage(19_000, 1000) }),
      user('q2', 500),
    ]);
    // The report saw a 19k prompt and produced 1k: 20,000, then the new user message.
    expect(estimateContextTokens(view)).toEqual({ tokens: 20_500, source: 'usage', reportSeq: 2 });
  });

  it("adds the reporting turn's tool results (they came after the usage)", () => {
    const view = conversation([
      user('q', 100),
      assistant([text('reading', 10), toolPart('read', 3000)], { usage: usage(10_000, 50) }),
    ]);
    expect(estimateContextTokens(view).tokens).toBe(10_050 + 3000);
  });

  it('ignores usage reported before the latest compaction (a prompt that no longer exists)', () => {
    // Kept messages keep their old seqs (5, 6); the compaction wrote seqs 10 and 11.
    const view = [
      user('compact', 5, { seq: 10, id: 'm10', summary: true }),
      summary('the summary', 900, { seq: 11, id: 'm11' }),
      assistant('kept answer', { seq: 5, id: 'm5', tokens: 400, usage: usage(150_000, 400) }),
      user('kept question', 100, { seq: 6, id: 'm6' }),
    ];
    expect(latestSummarySeq(view)).toBe(11);
    expect(estimateContextTokens(view)).toEqual({
      tokens: 5 + 900 + 400 + 100,
      source: 'stored',
      reportSeq: null,
    });
    const later = [
      ...view,
      assistant('new answer', { seq: 12, id: 'm12', tokens: 300, usage: usage(1500, 300) }),
    ];
    expect(estimateContextTokens(later)).toEqual({ tokens: 1800, source: 'usage', reportSeq: 12 });
  });

  it('takes an explicit last compaction seq (a compaction that wrote no summary)', () => {
    const view = conversation([user('q', 100), assistant('a', { tokens: 50, usage: usage(40_000, 50) })], 7);
    expect(estimateContextTokens(view, { lastCompactionSeq: 8 }).source).toBe('stored');
    expect(estimateContextTokens(view, { lastCompactionSeq: 7 }).source).toBe('usage');
  });

  it('exact mode sums stored counts even with a report', () => {
    const view = conversation([user('q', 100), assistant('a', { tokens: 50, usage: usage(40_000, 50) })]);
    expect(estimateContextTokens(view, { mode: 'exact' })).toEqual({
      tokens: 150,
      source: 'stored',
      reportSeq: null,
    });
  });

  it('subtracts outputs pruned after the report measured them', () => {
    const reportedAt = '2025-01-01T10:00:00.000Z';
    const view = conversation([
      user('q', 100),
      assistant([toolPart('read', 30_000, { compactedAt: '2025-01-01T10:05:00.000Z' })], {
        usage: usage(5000, 100),
        createdAt: '2025-01-01T09:00:00.000Z',
      }),
      assistant([toolPart('read', 8000, { compactedAt: '2025-01-01T09:30:00.000Z' })], {
        usage: usage(4000, 100),
        createdAt: '2025-01-01T09:20:00.000Z',
      }),
      assistant('answer', { tokens: 200, usage: usage(60_000, 200), createdAt: reportedAt }),
    ]);
    // Pruned at 10:05, after the report started at 10:00: the report still counted 30,000.
    // Pruned at 09:30: the report's prompt already had the placeholder.
    expect(estimateContextTokens(view).tokens).toBe(60_200 - (30_000 - PRUNED_OUTPUT_PLACEHOLDER_TOKENS));
  });

  it('leaves the estimate alone when times do not parse', () => {
    const view = conversation([
      assistant([toolPart('read', 30_000, { compactedAt: 'yesterday' })], { usage: usage(5000, 100) }),
      assistant('answer', { tokens: 200, usage: usage(60_000, 200), createdAt: 'now' }),
    ]);
    expect(estimateContextTokens(view).tokens).toBe(60_200);
  });
});
