import { describe, expect, it } from 'vitest';
import { DEFAULT_CONTEXT_WINDOW, lookupKnownModel, resolveModelInfo } from './model-catalog';

describe('lookupKnownModel', () => {
  it.each([
    ['gpt-4o', 'gpt-4o'],
    ['gpt-4o-mini', 'gpt-4o-mini'],
    ['gpt-4o-2024-08-06', 'gpt-4o'],
    ['openai/gpt-4.1-mini', 'gpt-4.1-mini'],
    ['anthropic/claude-sonnet-4-20250514', 'claude-sonnet-4'],
    ['claude-sonnet-4-5@20250929', 'claude-sonnet-4-5'],
    ['GPT-5', 'gpt-5'],
    ['gpt-4', 'gpt-4'],
    ['gpt-4-0613', 'gpt-4'],
    // `.` is not a separator: these are not an 8k gpt-4.
    ['gpt-4.5-preview', 'gpt-4.5'],
    ['openai/gpt-4.5-preview', 'gpt-4.5'],
    ['gpt-4.5-preview-2025-02-27', 'gpt-4.5'],
    ['gpt-4-32k', 'gpt-4-32k'],
    ['gpt-4-32k-0613', 'gpt-4-32k'],
    ['gpt-4.1-2025-04-14', 'gpt-4.1'],
    ['gpt-4.7', null],
    ['anthropic/claude-sonnet-4.5', 'claude-sonnet-4.5'],
    ['anthropic/claude-3.7-sonnet', 'claude-3.7-sonnet'],
    ['gpt-40', null],
    ['my-local-model', null],
  ])('%s → %s', (id, expected) => {
    expect(lookupKnownModel(id)?.id ?? null).toBe(expected);
  });
});

describe('resolveModelInfo', () => {
  it('fills a known model from the catalog', () => {
    expect(resolveModelInfo({ id: 'gpt-4o', provider: 'openai' })).toEqual({
      id: 'gpt-4o',
      provider: 'openai',
      contextWindow: 128_000,
      maxOutputTokens: 16_384,
      inputLimit: null,
    });
    expect(resolveModelInfo({ id: 'gpt-5' }).inputLimit).toBe(272_000);
  });

  it.each([
    ['gpt-4', 8192, 8192],
    ['gpt-4-32k', 32_768, 8192],
    ['gpt-4.5-preview', 128_000, 16_384],
    ['openai/gpt-4.5-preview', 128_000, 16_384],
  ])('%s: %i window, %i output', (id, contextWindow, maxOutputTokens) => {
    expect(resolveModelInfo({ id })).toMatchObject({ contextWindow, maxOutputTokens, inputLimit: null });
  });

  it('gives an unknown model 128k and the 32k output ceiling', () => {
    expect(resolveModelInfo({ id: 'custom' })).toEqual({
      id: 'custom',
      provider: 'unknown',
      contextWindow: DEFAULT_CONTEXT_WINDOW,
      maxOutputTokens: 32_000,
      inputLimit: null,
    });
  });

  it('lets explicit values win, including an explicit null input limit', () => {
    expect(
      resolveModelInfo({ id: 'gpt-5', contextWindow: 50_000, maxOutputTokens: 1_000, inputLimit: null }),
    ).toMatchObject({
      contextWindow: 50_000,
      maxOutputTokens: 1_000,
      inputLimit: null,
    });
  });

  it('fits the limits a client did not state to the window it did', () => {
    expect(resolveModelInfo({ id: 'gpt-4o', contextWindow: 4_096 })).toMatchObject({
      contextWindow: 4_096,
      maxOutputTokens: 4_096,
      inputLimit: null,
    });
    expect(resolveModelInfo({ id: 'gpt-5', contextWindow: 100_000 })).toMatchObject({
      maxOutputTokens: 100_000,
      inputLimit: null,
    });
    expect(resolveModelInfo({ id: 'gpt-5', contextWindow: 300_000 }).inputLimit).toBe(272_000);
    expect(resolveModelInfo({ id: 'custom', contextWindow: 8_000 }).maxOutputTokens).toBe(8_000);
    // An unlimited window bounds nothing; stated limits are returned as stated (the contract judges them).
    expect(resolveModelInfo({ id: 'gpt-5', contextWindow: 0 })).toMatchObject({
      maxOutputTokens: 128_000,
      inputLimit: 272_000,
    });
    expect(
      resolveModelInfo({ id: 'gpt-4o', contextWindow: 4_096, maxOutputTokens: 9_000 }).maxOutputTokens,
    ).toBe(9_000);
  });

  it('takes inherited limits (a patch keeping the model) before the catalog, fitted the same way', () => {
    const stored = { contextWindow: 64_000, maxOutputTokens: 16_384, inputLimit: 60_000 };
    expect(resolveModelInfo({ id: 'gpt-4o' }, stored)).toMatchObject(stored);
    expect(resolveModelInfo({ id: 'gpt-4o', contextWindow: 8_192 }, stored)).toMatchObject({
      contextWindow: 8_192,
      maxOutputTokens: 8_192,
      inputLimit: null,
    });
    expect(resolveModelInfo({ id: 'gpt-4o', inputLimit: null }, stored).inputLimit).toBeNull();
  });
});
