import type { ModelInfo, Policy } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { resolveSummarizerSettings } from './settings';

const policy: Policy['summarizer'] = {
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
    });
  });
});
