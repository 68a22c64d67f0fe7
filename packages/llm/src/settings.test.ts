import type { ModelInfo, Policy } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { LlmFatalError } from './errors';
import { resolveSummarizerSettings } from './settings';

const policy: Policy['summarizer'] = {
  prompt: 'structured',
  model: null,
  maxOutputTokens: 4096,
  timeoutMs: 60_000,
  contextWindow: null,
  toolResultMaxChars: 2000,
  toolArgsMaxChars: 1000,
};
const session: ModelInfo = {
  id: 'gpt-4o',
  provider: 'openai',
  contextWindow: 128_000,
  maxOutputTokens: 16_384,
  inputLimit: null,
};

describe('resolveSummarizerSettings', () => {
  it.each<
    [
      string,
      Partial<Policy['summarizer']>,
      Partial<ModelInfo>,
      string | null,
      { model: string; contextWindow: number | null },
    ]
  >([
    ["the session's model and window by default", {}, {}, null, { model: 'gpt-4o', contextWindow: 128_000 }],
    [
      'a deployment default model, window from the catalog',
      {},
      {},
      'gpt-4.1-mini',
      { model: 'gpt-4.1-mini', contextWindow: 1_047_576 },
    ],
    [
      "the policy's model wins over the deployment's",
      { model: 'gpt-4o-mini' },
      {},
      'gpt-4.1-mini',
      { model: 'gpt-4o-mini', contextWindow: 128_000 },
    ],
    [
      "the policy's window wins",
      { model: 'gpt-4o-mini', contextWindow: 32_000 },
      {},
      null,
      { model: 'gpt-4o-mini', contextWindow: 32_000 },
    ],
    [
      'an unknown model has an unknown window',
      { model: 'llama3.1:8b-local' },
      {},
      null,
      { model: 'llama3.1:8b-local', contextWindow: null },
    ],
    [
      'an input limit caps the prompt',
      {},
      { id: 'gpt-5', contextWindow: 400_000, inputLimit: 272_000 },
      null,
      { model: 'gpt-5', contextWindow: 276_096 },
    ],
    [
      'a catalog input limit too',
      { model: 'gpt-5-mini' },
      {},
      null,
      { model: 'gpt-5-mini', contextWindow: 276_096 },
    ],
    [
      'an unlimited session window is unknown',
      {},
      { contextWindow: 0 },
      null,
      { model: 'gpt-4o', contextWindow: null },
    ],
  ])('%s', (_name, policyOverrides, sessionOverrides, defaultModel, expected) => {
    const settings = resolveSummarizerSettings({
      policy: { ...policy, ...policyOverrides },
      session: { ...session, ...sessionOverrides },
      defaultModel,
    });
    expect(settings).toEqual({
      ...expected,
      maxOutputTokens: 4096,
      timeoutMs: 60_000,
      toolResultMaxChars: 2000,
      toolArgsMaxChars: 1000,
      prompt: 'structured',
    });
  });
});

describe('resolveSummarizerSettings clamps the output budget', () => {
  // The default policy asks for 8,192 output tokens; these models accept at most 4,096 and
  // reject more with "max_tokens is too large", which failed every summary.
  const defaultPolicy: Policy['summarizer'] = { ...policy, maxOutputTokens: 8192 };
  it.each<[string, Partial<Policy['summarizer']>, Partial<ModelInfo>, number, number | null]>([
    ['gpt-4-turbo as the summarizer (catalog: 4,096)', { model: 'gpt-4-turbo' }, {}, 4096, 128_000],
    ['gpt-3.5-turbo (4,096, and a quarter of 16,385)', { model: 'gpt-3.5-turbo' }, {}, 4096, 16_385],
    ['a llama-3.1 variant', { model: 'llama-3.1-70b-instruct' }, {}, 4096, 128_000],
    [
      "the session's own limit for the same model",
      {},
      { id: 'my-model', maxOutputTokens: 2000 },
      2000,
      128_000,
    ],
    [
      "the session's limit, not the catalog's, for the session's model",
      {},
      { id: 'gpt-4-turbo', maxOutputTokens: 3000 },
      3000,
      128_000,
    ],
    ['a quarter of a small window', { model: 'gpt-4' }, {}, 2048, 8192],
    ["a quarter of the policy's window", { contextWindow: 12_000 }, {}, 3000, 12_000],
    ['the policy when it is the smallest', { maxOutputTokens: 500 }, {}, 500, 128_000],
    ['an unknown model with an unknown window: the policy', { model: 'local-model' }, {}, 8192, null],
  ])('%s', (_name, policyOverrides, sessionOverrides, maxOutputTokens, contextWindow) => {
    const settings = resolveSummarizerSettings({
      policy: { ...defaultPolicy, ...policyOverrides },
      session: { ...session, ...sessionOverrides },
    });
    expect(settings).toMatchObject({ maxOutputTokens, contextWindow });
  });

  it('a window too small for any summary prompt is a fatal configuration error, not an overflow loop', () => {
    const resolve = (contextWindow: number) => () =>
      resolveSummarizerSettings({ policy: { ...defaultPolicy, contextWindow }, session });
    expect(resolve(1500)).toThrow(LlmFatalError);
    expect(resolve(1500)).toThrow(/too small for a summary/);
    expect(resolve(4000)).not.toThrow();
  });
});
