import { describe, expect, it } from 'vitest';
import { resolveCacheModel, type CacheModel } from './cache';
import { DEFAULT_POLICY, type PruningPolicy } from './policy';
import {
  isCacheAwarePruning,
  pruneSavingBound,
  turnPruneCacheDecision,
  type TurnPruneCacheInputs,
} from './prune-cache';

const NOW = new Date('2026-01-05T10:00:00.000Z');
const secondsAgo = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);
const SONNET = resolveCacheModel('claude-sonnet-4-5'); // 3 / 15 / read 0.3 / write 3.75, explicit, 300 s
const GPT_4O = resolveCacheModel('gpt-4o'); // 2.5 / 10 / read 1.25 / write 2.5, automatic, 300 s
const UNKNOWN = resolveCacheModel('in-house-model');
const pruning = (overrides: Partial<PruningPolicy> = {}): PruningPolicy => ({
  ...DEFAULT_POLICY.pruning,
  ...overrides,
});

/**
 * 100,000 tokens served, 70,000 of them unpruned outputs (largest 5,000): with the default 40,000
 * protected, a prune clears at most 70,000 − 40,000 + 5,000 = 35,000. 10,000 tokens of pinned
 * system messages and summary lead the prompt; the last report read 90,000 and wrote 5,000.
 */
const inputs = (overrides: Partial<TurnPruneCacheInputs> = {}): TurnPruneCacheInputs => ({
  pruning: pruning(),
  model: SONNET,
  contextTokens: 100_000,
  unprunedOutputs: { total: 70_000, largest: 5_000 },
  untouchedPrefixTokens: 10_000,
  lastReport: { usage: { cacheRead: 90_000, cacheWrite: 5_000 }, at: secondsAgo(30) },
  now: NOW,
  ...overrides,
});

describe('isCacheAwarePruning', () => {
  it.each<[string, boolean | null, CacheModel, boolean]>([
    ['null on a priced, cached model: on', null, SONNET, true],
    ['null on an automatic cache with prices: on', null, GPT_4O, true],
    ['null without prices: off', null, UNKNOWN, false],
    [
      'null with a cache of kind none: off',
      null,
      { ...SONNET, cache: { kind: 'none', ttlSeconds: 0 } },
      false,
    ],
    ['false: off whatever the model', false, SONNET, false],
    ['true: on even without prices', true, UNKNOWN, true],
  ])('%s', (_name, cacheAware, model, expected) => {
    expect(isCacheAwarePruning({ cacheAware }, model)).toBe(expected);
  });
});

describe('pruneSavingBound: the most a prune can clear, from two sums', () => {
  it.each([
    // [total, largest, protect, bound]
    [70_000, 5_000, 40_000, 35_000],
    [30_000, 30_000, 40_000, 20_000], // one output crossing the protection: at most 30,000 − 40,000 + 30,000
    [10_000, 1_000, 40_000, 0], // all protected
    [50_000, 50_000, 0, 50_000], // never more than the total
  ])('total %i, largest %i, protect %i → %i', (total, largest, protectTokens, expected) => {
    expect(pruneSavingBound({ protectTokens }, { total, largest })).toBe(expected);
  });
});

describe('turnPruneCacheDecision', () => {
  it('lets the prune wait on a warm Anthropic cache it would not repay within 10 turns', () => {
    // 95,000 cached, 10,000 of them kept: 85,000 invalidated. Unchanged prompt: 95,000 × 0.3 +
    // 5,000 × 3.75 = 47,250; pruned: 10,000 × 0.3 + 55,000 × 3.75 = 209,250 (per million):
    // $0.162 more once; each later turn reads 35,000 fewer at 0.3: $0.0105; ⌈15.4⌉ = 16 turns.
    expect(turnPruneCacheDecision(inputs())).toEqual({
      run: false,
      effect: {
        invalidatedTokens: 85_000,
        rewriteCostUsd: 0.162,
        savingPerTurnUsd: 0.0105,
        breakEvenTurns: 16,
      },
    });
  });

  it('runs it when the horizon covers the break-even (16 turns within 20)', () => {
    expect(turnPruneCacheDecision(inputs({ pruning: pruning({ cacheHorizonTurns: 20 }) }))).toMatchObject({
      run: true,
      effect: { breakEvenTurns: 16 },
    });
  });

  it.each([
    [
      'past the TTL',
      { lastReport: { usage: { cacheRead: 90_000, cacheWrite: 5_000 }, at: secondsAgo(300) } },
    ],
    ['without a usage report', { lastReport: null }],
    [
      'when the report cached nothing',
      { lastReport: { usage: { cacheRead: 0, cacheWrite: 0 }, at: secondsAgo(1) } },
    ],
  ])('runs it on a cold cache (%s): nothing is invalidated', (_name, overrides) => {
    // Cold: the whole prompt is written either way, and the pruned one is 35,000 tokens shorter.
    expect(turnPruneCacheDecision(inputs(overrides))).toEqual({
      run: true,
      effect: { invalidatedTokens: 0, rewriteCostUsd: 0, savingPerTurnUsd: 0.0105, breakEvenTurns: 0 },
    });
  });

  it('runs it on gpt-4o, whose cache writes cost the input price: it pays within a turn', () => {
    // Unchanged: 95,000 × 1.25 + 5,000 × 2.5 = 131,250; pruned: 10,000 × 1.25 + 55,000 × 2.5 =
    // 150,000: $0.01875 more once, $0.04375 less every turn (35,000 × 1.25): ⌈0.43⌉ = 1 turn.
    expect(turnPruneCacheDecision(inputs({ model: GPT_4O }))).toEqual({
      run: true,
      effect: {
        invalidatedTokens: 85_000,
        rewriteCostUsd: 0.01875,
        savingPerTurnUsd: 0.04375,
        breakEvenTurns: 1,
      },
    });
  });

  it.each<[string, Partial<TurnPruneCacheInputs>]>([
    ['cacheAware: false (OpenCode)', { pruning: pruning({ cacheAware: false }) }],
    ['a model without prices', { model: UNKNOWN }],
  ])('runs it without weighing the cache: %s', (_name, overrides) => {
    expect(turnPruneCacheDecision(inputs(overrides))).toEqual({ run: true, effect: null });
  });

  it('runs it when asked to weigh the cache of a model without prices: nothing to weigh', () => {
    expect(
      turnPruneCacheDecision(inputs({ model: UNKNOWN, pruning: pruning({ cacheAware: true }) })),
    ).toEqual({
      run: true,
      effect: {
        invalidatedTokens: 85_000,
        rewriteCostUsd: null,
        savingPerTurnUsd: null,
        breakEvenTurns: null,
      },
    });
  });

  it.each<[string, number | null | undefined, boolean]>([
    // 100,000 served, a prune clears at most 35,000: it runs from a trigger at 135,000 down.
    ['no trigger point (unlimited window, or not evaluated)', null, false],
    ['no trigger point given', undefined, false],
    ['the trigger one token further than the saving', 135_001, false],
    ['the trigger exactly the saving away', 135_000, true],
    ['the trigger 10,000 away', 110_000, true],
    ['already over a trigger that held (an ineffective compaction)', 90_000, true],
  ])('near the trigger, a prune the cache would hold runs: %s', (_name, trigger, run) => {
    expect(turnPruneCacheDecision(inputs({ compactionTriggerTokens: trigger }))).toEqual({
      run,
      effect: {
        invalidatedTokens: 85_000,
        rewriteCostUsd: 0.162,
        savingPerTurnUsd: 0.0105,
        breakEvenTurns: 16,
      },
    });
  });

  it('still waits near the trigger when the prune could clear nothing (every output protected)', () => {
    // 30,000 of outputs, largest 1,000, 40,000 protected: the bound is 0, nothing to avert a compaction with.
    const decision = turnPruneCacheDecision(
      inputs({ unprunedOutputs: { total: 30_000, largest: 1_000 }, compactionTriggerTokens: 100_000 }),
    );
    expect(decision.run).toBe(false);
  });
});
