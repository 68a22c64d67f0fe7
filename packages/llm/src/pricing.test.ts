import { describe, expect, it } from 'vitest';
import { estimateCostUsd, findModelPrice } from './pricing';
import { ZERO_USAGE } from './usage';

describe('findModelPrice', () => {
  it.each([
    ['gpt-4o-mini', { input: 0.15, cachedInput: 0.075, output: 0.6 }],
    ['GPT-4o-mini', { input: 0.15, cachedInput: 0.075, output: 0.6 }],
    ['gpt-4o-mini-2024-07-18', { input: 0.15, cachedInput: 0.075, output: 0.6 }],
    ['openai/gpt-4o-mini', { input: 0.15, cachedInput: 0.075, output: 0.6 }],
    ['gpt-4o-2024-08-06', { input: 2.5, cachedInput: 1.25, output: 10 }],
    ['gpt-4.1-nano', { input: 0.1, cachedInput: 0.025, output: 0.4 }],
    ['anthropic/claude-3-5-haiku-latest', { input: 0.8, cachedInput: 0.08, output: 4 }],
    ['llama3.1:8b', null],
    ['stub-summarizer', null],
    ['gpt-4omni', null],
  ])('%s', (model, price) => {
    expect(findModelPrice(model)).toEqual(price);
  });

  it('uses the given table instead of the defaults', () => {
    expect(findModelPrice('my-model', { 'my-model': { input: 1, output: 2 } })).toEqual({
      input: 1,
      output: 2,
    });
    expect(findModelPrice('gpt-4o', { 'my-model': { input: 1, output: 2 } })).toBeNull();
  });
});

describe('estimateCostUsd', () => {
  it.each([
    ['prompt and completion', { promptTokens: 1_000_000, completionTokens: 1_000_000 }, 0.75],
    [
      'cached prompt tokens at the cached price',
      { promptTokens: 1_000_000, cachedPromptTokens: 400_000, completionTokens: 0 },
      0.12,
    ],
    ['a small call', { promptTokens: 12_345, completionTokens: 678 }, 0.00225855],
  ])('%s (gpt-4o-mini)', (_name, usage, dollars) => {
    expect(estimateCostUsd('gpt-4o-mini', { ...ZERO_USAGE, ...usage })).toBe(dollars);
  });

  it('is null for an unknown model', () => {
    expect(estimateCostUsd('mystery', { ...ZERO_USAGE, promptTokens: 10 })).toBeNull();
  });

  it('charges the full input price when a model has no cache discount', () => {
    const table = { m: { input: 1, output: 0 } };
    expect(
      estimateCostUsd('m', { ...ZERO_USAGE, promptTokens: 1_000_000, cachedPromptTokens: 500_000 }, table),
    ).toBe(1);
  });
});
