import { describe, expect, it } from 'vitest';
import { llmConfigFromEnv, llmEnvSchema } from './config';
import { DEFAULT_PRICES } from './pricing';

describe('llmEnvSchema and llmConfigFromEnv', () => {
  it('needs only an API key for OpenAI', () => {
    const { config, defaults } = llmConfigFromEnv(llmEnvSchema.parse({ OPENAI_API_KEY: 'sk-test' }));
    expect(config).toEqual({
      apiKey: 'sk-test',
      baseURL: null,
      timeoutMs: 120_000,
      stream: false,
      maxTokensParameter: 'max_completion_tokens',
      invalidOutputRetries: 1,
      prices: DEFAULT_PRICES,
    });
    expect(defaults).toEqual({ summarizerModel: null, topicModel: null });
  });

  it('accepts a local server without a key, and reads every setting', () => {
    const { config, defaults } = llmConfigFromEnv(
      llmEnvSchema.parse({
        OPENAI_BASE_URL: 'http://localhost:11434/v1',
        LLM_SUMMARIZER_MODEL: 'qwen2.5:7b',
        LLM_TIMEOUT_MS: '30000',
        LLM_STREAM: 'true',
        LLM_MAX_TOKENS_PARAM: 'max_tokens',
        LLM_INVALID_OUTPUT_RETRIES: '2',
        LLM_PRICES_JSON: '{"qwen2.5:7b":{"input":0,"output":0}}',
      }),
    );
    expect(config).toMatchObject({
      apiKey: 'no-key',
      baseURL: 'http://localhost:11434/v1',
      timeoutMs: 30_000,
      stream: true,
      maxTokensParameter: 'max_tokens',
      invalidOutputRetries: 2,
    });
    expect(config.prices?.['qwen2.5:7b']).toEqual({ input: 0, output: 0 });
    expect(config.prices?.['gpt-4o']).toEqual(DEFAULT_PRICES['gpt-4o']);
    // The topic detector uses the summarizer model unless told otherwise.
    expect(defaults).toEqual({ summarizerModel: 'qwen2.5:7b', topicModel: 'qwen2.5:7b' });
  });

  it.each([
    ['no key and no base URL', {}],
    ['a base URL that is not a URL', { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'localhost' }],
    ['a zero timeout', { OPENAI_API_KEY: 'k', LLM_TIMEOUT_MS: '0' }],
    ['prices that are not JSON', { OPENAI_API_KEY: 'k', LLM_PRICES_JSON: '{' }],
    ['prices of the wrong shape', { OPENAI_API_KEY: 'k', LLM_PRICES_JSON: '{"m":{"input":"cheap"}}' }],
  ])('rejects %s', (_name, env) => {
    expect(llmEnvSchema.safeParse(env).success).toBe(false);
  });
});
