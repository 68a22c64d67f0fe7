import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderToolPart } from './context';
import { toOpenAIMessages } from './openai-format';
import { prunedOutputMarker, type Part } from './model';
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
  lastStepStart,
  PRUNED_OUTPUT_MARKER_FIXED_CHARS,
  prunedOutputMarkerTokens,
  reportedContextTokens,
  startsStep,
  storedTokens,
  toolResultTokens,
} from './tokens';

/**
 * The hybrid formula's mechanics without the calibration cap (reports far above the stored
 * counts): the cap and the floor are tested on their own below.
 */
const UNCAPPED = { calibrationCap: Number.MAX_SAFE_INTEGER };

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
});

describe('prunedOutputMarkerTokens: the marker text by characters, the call id by UTF-8 bytes', () => {
  it('has 43 fixed characters', () => {
    expect(PRUNED_OUTPUT_MARKER_FIXED_CHARS).toBe(43);
    expect(prunedOutputMarker('call_2')).toBe('[Old tool result content cleared — recall call_2]');
  });
  it.each([
    ['empty id: (43 + 0 + 3) / 4', '', 11],
    ['ASCII id: (43 + 6 + 3) / 4', 'call_2', 13],
    ['two-byte character: (43 + 2 + 3) / 4', 'é', 12],
    ['two CJK characters, 3 bytes each: (43 + 6 + 3) / 4', '日本', 13],
    ['an emoji, 4 bytes: (43 + 4 + 3) / 4, rounded down', '😀', 12],
    ['200 ASCII characters: (43 + 200 + 3) / 4', 'x'.repeat(200), 61],
    ['100 emoji (200 UTF-16 units), 400 bytes: (43 + 400 + 3) / 4', '😀'.repeat(100), 111],
  ])('%s', (_name, callId, expected) => {
    expect(prunedOutputMarkerTokens(callId)).toBe(expected);
    // Never below the usual length / 4 estimate of the marker the model is shown.
    expect(expected).toBeGreaterThanOrEqual(estimateTokens(prunedOutputMarker(callId)));
  });
});

describe('partTokens and messageTokens: stored counts, markers for pruned outputs', () => {
  // The marker of call_7: (43 + 6 + 3) / 4 = 13 tokens.
  const pruned = toolPart('read', 3000, {
    callId: 'call_7',
    tokens: 3020,
    compactedAt: '2025-01-02T00:00:00Z',
  });
  it.each<[string, Part, number]>([
    ['text', text('hello', 7), 7],
    ['reasoning', { type: 'reasoning', text: 'hmm', tokens: 12 }, 12],
    ['file', { type: 'file', mime: 'image/png', filename: null, url: 'u', tokens: 1200 }, 1200],
    ['compaction marker', { type: 'compaction', auto: true, tokens: 5 }, 5],
    ['tool part, shown', toolPart('read', 3000, { tokens: 3020 }), 3020],
    ['tool part, pruned: call + marker', pruned, 20 + 13],
    ['pruned part with inconsistent counts never goes negative', { ...pruned, tokens: 10 }, 13],
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
    expect(messageTokens(message)).toBe(10 + 3020 + 20 + 13);
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
    // `output` includes reasoning (model.ts Usage); later prompts drop it.
    ['reasoning is part of output and not context', usage(1000, 300, { reasoning: 200 }), 1000, 1100],
    [
      'an o-series turn: 6000 output, 5800 of it reasoning',
      usage(40_000, 6000, { reasoning: 5800 }),
      40_000,
      40_200,
    ],
    [
      'reasoning reported above output never subtracts prompt',
      usage(1000, 100, { reasoning: 300 }),
      1000,
      1000,
    ],
  ])('%s', (_name, report, prompt, context) => {
    expect(promptTokens(report)).toBe(prompt);
    expect(reportedContextTokens(report)).toBe(context);
  });

  it('tool results of the last step arrive after the report: completed, pruned, errored, still running', () => {
    const message = assistant([
      toolPart('read', 3000),
      toolPart('read', 5000, { callId: 'call_7', compactedAt: '2025-01-02T00:00:00Z' }),
      toolPart('bash', 0, { status: 'error', error: 'x'.repeat(40) }),
      toolPart('bash', 0, { status: 'running' }),
    ]);
    // The running call will be shown with the interrupted result.
    expect(toolResultTokens(message)).toBe(3000 + 13 + 10 + INTERRUPTED_TOOL_RESULT_TOKENS);
  });
});

describe('steps: only the last step’s tool results came after the report', () => {
  const reasoning = (tokens: number): Part => ({ type: 'reasoning', text: 'hmm', tokens });
  const file: Part = { type: 'file', mime: 'image/png', filename: null, url: 'u', tokens: 5 };
  const marker: Part = { type: 'compaction', auto: true, tokens: 5 };
  it.each<[string, Part[], number, number]>([
    ['one step: every result', [text('look', 1), toolPart('read', 100), toolPart('read', 200)], 0, 300],
    // Step 1 read 100 and 200; the text starts step 2, whose prompt already held them.
    [
      'a text after the calls starts a new step',
      [toolPart('read', 100), text('now', 1), toolPart('grep', 7)],
      1,
      7,
    ],
    [
      'the last step has no calls: nothing',
      [toolPart('read', 100), toolPart('read', 200), text('done', 2)],
      2,
      0,
    ],
    ['three steps', [toolPart('a', 1), text('x', 1), toolPart('b', 2), text('y', 1), toolPart('c', 4)], 3, 4],
    ['reasoning never splits', [toolPart('read', 100), reasoning(50), toolPart('grep', 7)], 0, 107],
    ['a blank text never splits', [toolPart('read', 100), text('  \n', 0), toolPart('grep', 7)], 0, 107],
    ['a file splits', [toolPart('read', 100), file, toolPart('grep', 7)], 1, 7],
    ['a compaction note splits', [toolPart('read', 100), marker, toolPart('grep', 7)], 1, 7],
    ['texts before any call do not split', [text('a', 1), text('b', 1), toolPart('read', 9)], 0, 9],
  ])('%s', (_name, parts, start, results) => {
    expect(lastStepStart(parts)).toBe(start);
    expect(toolResultTokens(assistant(parts))).toBe(results);
  });

  it('the SQL rule: a tool part counts exactly when no later part starts a step', () => {
    const partArb = fc.oneof(
      fc.constant<Part>(toolPart('read', 10)),
      fc.constantFrom('', ' ', 'text').map((value): Part => text(value, 1)),
      fc.constant<Part>({ type: 'reasoning', text: 'r', tokens: 1 }),
      fc.constant<Part>(file),
      fc.constant<Part>(marker),
    );
    fc.assert(
      fc.property(fc.array(partArb, { maxLength: 10 }), (parts) => {
        const counted = parts.filter(
          (part, index) => part.type === 'tool' && !parts.slice(index + 1).some(startsStep),
        ).length;
        expect(toolResultTokens(assistant(parts))).toBe(counted * 10);
      }),
    );
  });

  it('steps are exactly the Chat Completions renderer’s: the results after its last assistant message', () => {
    const partArb = fc.oneof(
      fc.constant<Part>(toolPart('read', 10)),
      fc.constantFrom('', ' ', 'text').map((value): Part => text(value, 1)),
      fc.constant<Part>({ type: 'reasoning', text: 'r', tokens: 1 }),
      fc.constant<Part>(file),
    );
    fc.assert(
      fc.property(fc.array(partArb, { maxLength: 10 }), (parts) => {
        const [message] = conversation([assistant(parts)]);
        const rendered = toOpenAIMessages([message!]);
        const lastAssistant = rendered.map((m) => m.role).lastIndexOf('assistant');
        const results = rendered.slice(lastAssistant + 1).filter((m) => m.role === 'tool').length;
        expect(toolResultTokens(message!)).toBe(results * 10);
      }),
    );
  });

  it('the estimate does not count an earlier step’s results twice', () => {
    // Step 1 called read (30,000); step 2's prompt (50,000) already held that result.
    const view = conversation([
      user('q', 100),
      assistant([toolPart('read', 30_000), text('found it', 5), toolPart('edit', 40)], {
        usage: usage(50_000, 60),
      }),
    ]);
    expect(estimateContextTokens(view, UNCAPPED).tokens).toBe(50_060 + 40);
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
    expect(estimateContextTokens(fresh, UNCAPPED)).toEqual({
      tokens: 200,
      calibration: 0,
      source: 'stored',
      reportSeq: null,
    });
  });

  it('calibrates on the last report and adds what came after it', () => {
    const view = conversation([
      user('q1', 100),
      assistant('a1', { tokens: 1000, usage: usage(19_000, 1000) }),
      user('q2', 500),
    ]);
    // The report saw a 19k prompt and produced 1k: 20,000, then the new user message.
    expect(estimateContextTokens(view, UNCAPPED)).toEqual({
      tokens: 20_500,
      calibration: 20_500 - 1600,
      source: 'usage',
      reportSeq: 2,
    });
  });

  it("adds the reporting turn's tool results (they came after the usage)", () => {
    const view = conversation([
      user('q', 100),
      assistant([text('reading', 10), toolPart('read', 3000)], { usage: usage(10_000, 50) }),
    ]);
    expect(estimateContextTokens(view, UNCAPPED).tokens).toBe(10_050 + 3000);
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
    expect(estimateContextTokens(view, UNCAPPED)).toEqual({
      tokens: 5 + 900 + 400 + 100,
      calibration: 0,
      source: 'stored',
      reportSeq: null,
    });
    const later = [
      ...view,
      assistant('new answer', { seq: 12, id: 'm12', tokens: 300, usage: usage(1500, 300) }),
    ];
    expect(estimateContextTokens(later, UNCAPPED)).toEqual({
      tokens: 1800,
      calibration: 1800 - 1705,
      source: 'usage',
      reportSeq: 12,
    });
  });

  it('takes an explicit last compaction seq (a compaction that wrote no summary)', () => {
    const view = conversation([user('q', 100), assistant('a', { tokens: 50, usage: usage(40_000, 50) })], 7);
    expect(estimateContextTokens(view, { ...UNCAPPED, lastCompactionSeq: 8 }).source).toBe('stored');
    expect(estimateContextTokens(view, { ...UNCAPPED, lastCompactionSeq: 7 }).source).toBe('usage');
  });

  it('exact mode sums stored counts even with a report', () => {
    const view = conversation([user('q', 100), assistant('a', { tokens: 50, usage: usage(40_000, 50) })]);
    expect(estimateContextTokens(view, { ...UNCAPPED, mode: 'exact' })).toEqual({
      tokens: 150,
      calibration: 0,
      source: 'stored',
      reportSeq: null,
    });
  });

  it('subtracts outputs pruned after the report measured them', () => {
    const reportedAt = '2025-01-01T10:00:00.000Z';
    const view = conversation([
      user('q', 100),
      assistant([toolPart('read', 30_000, { callId: 'call_7', compactedAt: '2025-01-01T10:05:00.000Z' })], {
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
    // Pruned at 09:30: the report's prompt already had the marker (call_7's: 13 tokens).
    expect(estimateContextTokens(view, UNCAPPED).tokens).toBe(60_200 - (30_000 - 13));
  });

  it('leaves the estimate alone when times do not parse', () => {
    const view = conversation([
      assistant([toolPart('read', 30_000, { compactedAt: 'yesterday' })], { usage: usage(5000, 100) }),
      assistant('answer', { tokens: 200, usage: usage(60_000, 200), createdAt: 'now' }),
    ]);
    expect(estimateContextTokens(view, UNCAPPED).tokens).toBe(60_200);
  });
});
