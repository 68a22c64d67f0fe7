/**
 * The estimate no usage report can push below the truth: the hybrid estimate held between the
 * exact stored count and the stored count plus a quarter of the usable input (tokens.ts
 * `boundedEstimate`), with hand-computed numbers on a 4k model.
 */
import { describe, expect, it } from 'vitest';
import { POLICY_PRESETS } from './policy';
import { assistant, conversation, model, usage, user } from './test-support/builders';
import { boundedEstimate, USAGE_CALIBRATION_MAX_SHARE, usageCalibrationCap } from './estimate-bounds';
import { estimateContextTokens } from './tokens';
import { evaluateTrigger, usableTokens } from './triggers';
import type { Usage } from './model';

const opencode = POLICY_PRESETS.opencode;
// 4,096 − min(4,096, 32,000, 1,024) = 3,072 usable; a report may add floor(3,072 / 4) = 768.
const small = model(4096, 4096);
const CAP = 768;

describe('usageCalibrationCap: a quarter of the usable input', () => {
  it.each<[string, number | null, number]>([
    ['4k window (usable 3,072)', 3072, 768],
    ['gpt-4o (usable 111,616)', 111_616, 27_904],
    ['rounds down', 5, 1],
    ['an unlimited window adds nothing', null, 0],
    ['no room adds nothing', 0, 0],
  ])('%s', (_name, usable, cap) => {
    expect(usageCalibrationCap(usable)).toBe(cap);
  });

  it('is the named share of what the status calls usable', () => {
    expect(USAGE_CALIBRATION_MAX_SHARE).toBe(0.25);
    expect(usageCalibrationCap(usableTokens(small, opencode))).toBe(CAP);
  });
});

describe('boundedEstimate: clamp(reported, stored, stored + cap)', () => {
  it.each<[string, number, number, number, number]>([
    ['a zero report is the stored count', 0, 5000, CAP, 5000],
    ['a tiny report is the stored count', 1000, 5000, CAP, 5000],
    ['a report below the stored count (a negative delta) is ignored', 4999, 5000, CAP, 5000],
    ['a report a little over adds what it saw', 5500, 5000, CAP, 5500],
    ['at the cap exactly', 5768, 5000, CAP, 5768],
    ['over the cap adds the cap', 5769, 5000, CAP, 5768],
    ['1,000× too large adds the cap', 5_000_000, 5000, CAP, 5768],
    ['2³¹−1 adds the cap', 2 ** 31 - 1, 5000, CAP, 5768],
    ['a cap of 0 is the stored count', 6000, 5000, 0, 5000],
    ['a negative cap counts as 0', 6000, 5000, -10, 5000],
  ])('%s', (_name, reported, stored, cap, expected) => {
    expect(boundedEstimate(reported, stored, cap)).toBe(expected);
  });
});

describe('estimateContextTokens with the cap', () => {
  // Stored: 1,000 + 500 + 200 = 1,700. The report's context is input + 500, then 200 after it.
  const view = (report: Usage) =>
    conversation([user('q', 1000), assistant('a', { tokens: 500, usage: report }), user('q2', 200)]);
  const estimate = (report: Usage, mode: 'hybrid' | 'exact' = 'hybrid') =>
    estimateContextTokens(view(report), { mode, calibrationCap: CAP });

  it.each<[string, Usage, number, number, 'usage' | 'stored']>([
    // A zero prompt is no report at all (latestUsageReport skips it).
    ['zero', usage(0, 0), 1700, 0, 'stored'],
    ['tiny: 10 + 500 + 200 = 710, below the stored 1,700', usage(10, 500), 1700, 0, 'usage'],
    ['honest: 1,300 + 500 + 200 = 2,000', usage(1300, 500), 2000, 300, 'usage'],
    ['1,000× too large: 1,700 + 768', usage(1_700_000, 500), 2468, CAP, 'usage'],
    ['2³¹−1: 1,700 + 768', usage(2 ** 31 - 1, 500), 2468, CAP, 'usage'],
    ['cache fields count alike', usage(0, 500, { cacheRead: 1_000_000 }), 2468, CAP, 'usage'],
  ])('%s', (_name, report, tokens, calibration, source) => {
    expect(estimate(report)).toMatchObject({ tokens, calibration, source });
  });

  it('exact mode is the stored count whatever the report', () => {
    expect(estimate(usage(1300, 500), 'exact')).toMatchObject({ tokens: 1700, calibration: 0 });
    expect(estimate(usage(2 ** 31 - 1, 500), 'exact')).toMatchObject({ tokens: 1700, calibration: 0 });
  });
});

describe('the trigger fires where the stored count says, whatever the report', () => {
  // The overflow trigger fires above usable: 3,072 on the 4k model.
  const session = (stored: number, report: Usage) =>
    conversation([user('task', stored - 100), assistant('a', { tokens: 100, usage: report })]);
  const fires = (stored: number, report: Usage) =>
    evaluateTrigger({ messages: session(stored, report), model: small, policy: opencode });

  it.each<[string, number, Usage, number, boolean]>([
    ['a zero report over the threshold fires', 3073, usage(0, 0), 3073, true],
    ['a tiny report over the threshold fires', 3073, usage(5, 5), 3073, true],
    ['a tiny report at the threshold holds', 3072, usage(5, 5), 3072, false],
    ['a report 3× the stored count holds: 1,000 + 768', 1000, usage(3000, 100), 1768, false],
    ['a large report fires only within the cap: 2,400 + 768', 2400, usage(1_000_000, 100), 3168, true],
  ])('%s', (_name, stored, report, tokens, compact) => {
    expect(fires(stored, report)).toMatchObject({ tokens, compact });
  });

  it('a prompt over the window is the provider saying it overflowed: an emergency, at any estimate', () => {
    // Opal's usage_overflow; reports beyond ten windows never get this far (the append refuses them).
    expect(fires(1000, usage(5000, 100))).toMatchObject({ tokens: 1768, reason: 'usage-overflow' });
  });
});
