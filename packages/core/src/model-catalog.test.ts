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
});
