import { describe, expect, it } from 'vitest';
import { LlmFatalError, LlmOverflowError } from './errors';
import type { FoldLimits, FoldState, Range } from './fold-plan';
import {
  afterAnswer,
  afterCutOff,
  afterOverflow,
  assertRoomForChunks,
  countsWholeFirst,
  crowdedRequest,
  fileListMaxChars,
  halves,
  inSeveralRequests,
  MAX_CUT_OFFS_IN_A_ROW,
  MAX_OVERFLOW_REPLANS,
  mayReplan,
  nextChunk,
  perMessageCountLimit,
  shrinkRatio,
  startFold,
} from './fold-plan';

/** The plan of a 6,000-token window with 1,500 output tokens, before any request. */
const { state: fresh, limits } = startFold({ model: 'm', contextWindow: 6000, maxOutputTokens: 1500 });
const at = (state: Partial<FoldState>): FoldState => ({ ...fresh, ...state });

describe('startFold: the budget and the length targets', () => {
  it.each<[string, number | null, number, FoldState['budget'], FoldLimits]>([
    // 6000 − 1500 output − 600 (10 % safety) − 16 framing.
    ['a known window', 6000, 1500, 3884, { maxOutputTokens: 1500, firstTarget: 750, minTarget: 128 }],
    ['a larger window', 8000, 2000, 5184, { maxOutputTokens: 2000, firstTarget: 1000, minTarget: 128 }],
    // Half of a small output budget is below 128: the lowest target is that half.
    ['a small output budget', 8000, 200, 6984, { maxOutputTokens: 200, firstTarget: 100, minTarget: 100 }],
    ['an odd output budget', 8000, 61, 7123, { maxOutputTokens: 61, firstTarget: 30, minTarget: 30 }],
    ['an unknown window', null, 1500, Infinity, { maxOutputTokens: 1500, firstTarget: 750, minTarget: 128 }],
    // 1686 − 1500 − 169 − 16: one token of prompt is still a budget.
    [
      'the smallest window with room',
      1686,
      1500,
      1,
      { maxOutputTokens: 1500, firstTarget: 750, minTarget: 128 },
    ],
  ])('%s', (_name, contextWindow, maxOutputTokens, budget, expected) => {
    const started = startFold({ model: 'm', contextWindow, maxOutputTokens });
    expect(started.state).toEqual({ budget, target: null, cutOffsInARow: 0, replans: 0 });
    expect(started.limits).toEqual(expected);
  });

  it.each<[number, string]>([
    [1685, 'maxOutputTokens 1500 leaves no room for a prompt in the 1685-token window of m'],
    [1500, 'maxOutputTokens 1500 leaves no room for a prompt in the 1500-token window of m'],
  ])(
    'refuses a %i-token window with 1500 output tokens as a configuration error',
    (contextWindow, message) => {
      const start = () => startFold({ model: 'm', contextWindow, maxOutputTokens: 1500 });
      expect(start).toThrow(LlmFatalError);
      expect(start).toThrow(message);
    },
  );
});

describe('the file-list share', () => {
  it.each<[number, number]>([
    // An eighth of the budget in tokens, about 4 characters a token.
    [3884, 1942],
    [5184, 2592],
    [1001, 500],
    [Infinity, Infinity],
  ])('a budget of %d tokens bounds the file lists to %d characters', (budget, chars) => {
    expect(fileListMaxChars(budget)).toBe(chars);
  });
});

describe('whether the whole range is counted before it is split', () => {
  it.each<[number, number, boolean]>([
    [0, 3884, true],
    [7768, 3884, true],
    [7769, 3884, false],
    [1_000_000, Infinity, true],
  ])(
    'stored %d tokens, budget %d: the first plan counts the whole prompt: %s',
    (stored, budget, expected) => {
      expect(countsWholeFirst(stored, budget)).toBe(expected);
    },
  );

  it.each<[number, number, number]>([
    // 10 % past the room: per-message counts run a little above the joined transcript's.
    [1000, 300, 800],
    [2000, 200, 2000],
  ])('budget %d, fixed part %d: per-message counts go up to %d tokens', (budget, fixed, limit) => {
    expect(perMessageCountLimit(budget, fixed)).toBe(limit);
  });
});

describe('the room for chunks', () => {
  it('accepts a window that leaves MIN_CHUNK_TOKENS (200) after instructions and a full summary', () => {
    expect(() => assertRoomForChunks(3884, 2184, 1500)).not.toThrow();
  });

  it('refuses one that leaves less, as a configuration error', () => {
    const check = () => assertRoomForChunks(3884, 2185, 1500);
    expect(check).toThrow(LlmFatalError);
    expect(check).toThrow(
      'the summarizer window (prompt budget 3884 tokens) leaves 199 tokens per chunk after instructions and a summary of 1500 tokens; raise its contextWindow or lower maxOutputTokens',
    );
  });

  it.each<[string, number, number, Range | null]>([
    ['room for a chunk', 200, 0, null],
    ['room for a chunk after chunks', 5000, 7, null],
    ['our own running summary came back too long: one message with it', 199, 1, { start: 10, end: 11 }],
    ['no room at all after chunks: still one message', -300, 3, { start: 10, end: 11 }],
  ])('%s', (_name, chunkBudget, chunksDone, expected) => {
    expect(crowdedRequest(10, 3884, chunkBudget, chunksDone)).toEqual(expected);
  });

  it('a previous summary that leaves no room before any chunk is an overflow', () => {
    const plan = () => crowdedRequest(0, 3884, -1461, 0);
    expect(plan).toThrow(LlmOverflowError);
    expect(plan).toThrow(
      'the summarizer window (prompt budget 3884 tokens) leaves -1461 tokens per chunk after instructions and the running summary: the previous summary is too large for this window',
    );
  });
});

describe('chunk boundaries', () => {
  it.each<[string, number, number[], number, number[], Range]>([
    ['everything counted fits', 0, [100, 200, 300], 1000, [], { start: 0, end: 3 }],
    [
      'greedy up to the message that passed the budget',
      40,
      [400, 400, 400],
      1000,
      [],
      { start: 40, end: 42 },
    ],
    ['an exact fit', 12, [500, 500, 1], 1000, [], { start: 12, end: 14 }],
    [
      'closes at the latest turn start in its second half',
      40,
      [200, 200, 200, 200, 200, 200],
      1000,
      [0, 2, 4],
      { start: 40, end: 44 },
    ],
    [
      'a turn start in the first half does not shorten it',
      40,
      [200, 200, 200, 200, 200, 200],
      1000,
      [2],
      { start: 40, end: 45 },
    ],
    ['a message larger than the budget goes alone', 7, [5000, 10], 3000, [], { start: 7, end: 8 }],
  ])('%s', (_name, from, tokens, chunkBudget, turnStarts, expected) => {
    expect(nextChunk(from, tokens, chunkBudget, new Set(turnStarts))).toEqual(expected);
  });

  it.each<[Range, [Range, Range]]>([
    [
      { start: 0, end: 5 },
      [
        { start: 0, end: 3 },
        { start: 3, end: 5 },
      ],
    ],
    [
      { start: 10, end: 12 },
      [
        { start: 10, end: 11 },
        { start: 11, end: 12 },
      ],
    ],
  ])('a range that does not fit is halved: %o', (range, expected) => {
    expect(halves(range)).toEqual(expected);
  });
});

describe('a cut-off answer shrinks the next request', () => {
  it('several messages: halves them and the target, down to the minimum, then gives up', () => {
    // Every first half is cut off again.
    const steps: Array<{ target: number | null; cutOffsInARow: number; requests: Range[] } | null> = [];
    let state = fresh;
    let range: Range = { start: 0, end: 16 };
    for (let i = 0; i <= MAX_CUT_OFFS_IN_A_ROW; i += 1) {
      const next = afterCutOff(state, limits, range);
      steps.push(
        next && {
          target: next.state.target,
          cutOffsInARow: next.state.cutOffsInARow,
          requests: next.requests,
        },
      );
      if (next === null) break;
      state = next.state;
      range = next.requests[0] as Range;
    }
    const r = (start: number, end: number): Range => ({ start, end });
    expect(steps).toEqual([
      { target: 750, cutOffsInARow: 1, requests: [r(0, 8), r(8, 16)] },
      { target: 375, cutOffsInARow: 2, requests: [r(0, 4), r(4, 8)] },
      { target: 187, cutOffsInARow: 3, requests: [r(0, 2), r(2, 4)] },
      { target: 128, cutOffsInARow: 4, requests: [r(0, 1), r(1, 2)] },
      null,
    ]);
    // The budget and the re-plans are not the cut-offs' business.
    expect(state).toMatchObject({ budget: 3884, replans: 0 });
  });

  it.each<[string, FoldState, Range, { target: number; cutOffsInARow: number; requests: Range[] } | null]>([
    [
      'one message in one request gets the first target',
      at({ target: null }),
      { start: 3, end: 4 },
      { target: 750, cutOffsInARow: 1, requests: [{ start: 3, end: 4 }] },
    ],
    [
      'one message: the same message with half the target',
      at({ target: 300, cutOffsInARow: 1 }),
      { start: 3, end: 4 },
      { target: 150, cutOffsInARow: 2, requests: [{ start: 3, end: 4 }] },
    ],
    [
      'one message: not below the minimum',
      at({ target: 200, cutOffsInARow: 2 }),
      { start: 3, end: 4 },
      { target: 128, cutOffsInARow: 3, requests: [{ start: 3, end: 4 }] },
    ],
    ['one message at the minimum: nothing is smaller', at({ target: 128 }), { start: 3, end: 4 }, null],
    [
      'several messages at the minimum: their halves',
      at({ target: 128 }),
      { start: 3, end: 6 },
      {
        target: 128,
        cutOffsInARow: 1,
        requests: [
          { start: 3, end: 5 },
          { start: 5, end: 6 },
        ],
      },
    ],
    [
      `after ${MAX_CUT_OFFS_IN_A_ROW} in a row: gives up`,
      at({ target: 750, cutOffsInARow: MAX_CUT_OFFS_IN_A_ROW }),
      { start: 0, end: 10 },
      null,
    ],
  ])('%s', (_name, state, range, expected) => {
    const next = afterCutOff(state, limits, range);
    expect(next && { ...next.state, requests: next.requests }).toEqual(
      expected && {
        ...state,
        target: expected.target,
        cutOffsInARow: expected.cutOffsInARow,
        requests: expected.requests,
      },
    );
  });

  it('a valid answer ends the cut-offs in a row, the target stays', () => {
    expect(afterAnswer(at({ target: 187, cutOffsInARow: 3 }))).toEqual(at({ target: 187, cutOffsInARow: 0 }));
  });

  it('the target is set once the input takes several requests, and never raised', () => {
    expect(inSeveralRequests(fresh, limits)).toEqual(at({ target: 750 }));
    expect(inSeveralRequests(at({ target: 187 }), limits)).toEqual(at({ target: 187 }));
  });
});

describe('an overflow error re-plans with a smaller budget', () => {
  it.each<[string, FoldState, number, FoldState | null]>([
    // Half of (20000 + 1500), minus the output: the unknown window's first guess.
    ['an unknown window', at({ budget: Infinity }), 20_000, at({ budget: 9250, replans: 1 })],
    [
      'a window our tokenizer misjudged',
      at({ budget: 3884, replans: 1 }),
      3000,
      at({ budget: 750, replans: 2 }),
    ],
    ['down to MIN_CHUNK_TOKENS', at({ budget: 3884 }), 1900, at({ budget: 200, replans: 1 })],
    ['not below it', at({ budget: 3884 }), 1899, null],
    ['the last re-plan', at({ replans: MAX_OVERFLOW_REPLANS - 1 }), 20_000, at({ budget: 9250, replans: 4 })],
    ['none after the last', at({ replans: MAX_OVERFLOW_REPLANS }), 20_000, null],
  ])('%s', (_name, state, promptTokens, expected) => {
    expect(afterOverflow(state, promptTokens, 1500)).toEqual(expected);
  });

  it('says whether another re-plan is allowed before anything is counted', () => {
    expect(mayReplan(at({ replans: 3 }))).toBe(true);
    expect(mayReplan(at({ replans: 4 }))).toBe(false);
  });
});

describe('cutting a single message to fit', () => {
  it.each<[string, number, number, number, number, number]>([
    // The room (3000) over what the message took (12000), aimed 10 % below.
    ['the first attempt', 1, 3884, 884, 12_884, 0.225],
    ['the next scales the previous share', 0.225, 3884, 884, 3984, 0.19596774193548389],
    ['no room for the message: nothing of it', 1, 1000, 1200, 1300, 0],
    ['a count at the fixed part does not divide by zero', 1, 1000, 900, 900, 90],
  ])('%s', (_name, previous, budget, fixed, tokens, ratio) => {
    expect(shrinkRatio(previous, budget, fixed, tokens)).toBe(ratio);
  });
});
