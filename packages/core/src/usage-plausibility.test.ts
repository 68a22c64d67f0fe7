import { describe, expect, it } from 'vitest';
import { usage } from './test-support/builders';
import {
  describeImplausibleUsage,
  implausibleUsage,
  USAGE_REPORT_MAX_WINDOWS,
  usagePeaks,
} from './usage-plausibility';

describe('usagePeaks: the largest prompt and output of a batch', () => {
  it('takes input + cacheRead + cacheWrite as the prompt, and skips messages without usage', () => {
    const peaks = usagePeaks([
      null,
      usage(100, 9000),
      undefined,
      usage(10, 20, { cacheRead: 500, cacheWrite: 70 }),
      usage(300, 1),
    ]);
    expect(peaks).toEqual({ prompt: { index: 3, tokens: 580 }, output: { index: 1, tokens: 9000 } });
  });

  it('is empty for a batch without reports', () => {
    expect(usagePeaks([null, undefined])).toEqual({ prompt: null, output: null });
  });
});

describe('implausibleUsage: more than ten context windows', () => {
  // An 8,192-token window: at most 81,920 of prompt or output.
  const check = (...reports: Parameters<typeof usage>[]) =>
    implausibleUsage(usagePeaks(reports.map((args) => usage(...args))), 8192);

  it.each<[string, Parameters<typeof usage>[], ReturnType<typeof implausibleUsage>]>([
    ['zero', [[0, 0]], null],
    ['a silent overflow (a prompt over the window) is a report', [[9000, 10]], null],
    ['ten windows exactly', [[81_920, 81_920]], null],
    [
      'a prompt one over',
      [[81_921, 0]],
      { index: 0, field: 'prompt', tokens: 81_921, contextWindow: 8192, limit: 81_920 },
    ],
    [
      'a prompt over by its cache reads',
      [
        [10, 10],
        [1, 1, { cacheRead: 100_000 }],
      ],
      { index: 1, field: 'prompt', tokens: 100_001, contextWindow: 8192, limit: 81_920 },
    ],
    [
      '2³¹−1 output',
      [[100, 2 ** 31 - 1]],
      { index: 0, field: 'output', tokens: 2 ** 31 - 1, contextWindow: 8192, limit: 81_920 },
    ],
  ])('%s', (_name, reports, expected) => {
    expect(check(...reports)).toEqual(expected);
  });

  it('bounds nothing for an unlimited window', () => {
    expect(implausibleUsage(usagePeaks([usage(2 ** 31 - 1, 2 ** 31 - 1)]), 0)).toBeNull();
  });

  it('says what was refused, with the numbers and where the mapping is', () => {
    const found = implausibleUsage(usagePeaks([usage(7_000_000, 10)]), 7168)!;
    expect(USAGE_REPORT_MAX_WINDOWS).toBe(10);
    expect(describeImplausibleUsage(found)).toBe(
      'usage reports a prompt (input + cacheRead + cacheWrite) of 7,000,000 tokens, more than ' +
        "10 × the model's 7,168-token context window (71,680): no turn of this model can report " +
        "that; map the provider's usage as docs/API.md#usage describes (nothing was stored)",
    );
  });
});
