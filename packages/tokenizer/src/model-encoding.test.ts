import { describe, expect, it } from 'vitest';
import { encodingForModel } from './model-encoding';

describe('encodingForModel', () => {
  it.each([
    ['gpt-4o', 'o200k_base'],
    ['gpt-4o-mini-2024-07-18', 'o200k_base'],
    ['chatgpt-4o-latest', 'o200k_base'],
    ['o1', 'o200k_base'],
    ['o1-mini', 'o200k_base'],
    ['o3-2025-04-16', 'o200k_base'],
    ['o4-mini', 'o200k_base'],
    ['gpt-4.1', 'o200k_base'],
    ['gpt-4.1-nano-2025-04-14', 'o200k_base'],
    ['gpt-4.5-preview', 'o200k_base'],
    ['gpt-5', 'o200k_base'],
    ['gpt-5-mini-2025-08-07', 'o200k_base'],
    ['GPT-4o', 'o200k_base'],
    ['openai/gpt-4o', 'o200k_base'],
    ['ft:gpt-4o-mini-2024-07-18:acme::abc123', 'o200k_base'],
    ['gpt-4', 'cl100k_base'],
    ['gpt-4-0613', 'cl100k_base'],
    ['gpt-4-32k', 'cl100k_base'],
    ['gpt-4-turbo-2024-04-09', 'cl100k_base'],
    ['gpt-4-vision-preview', 'cl100k_base'],
    ['gpt-3.5-turbo', 'cl100k_base'],
    ['gpt-3.5-turbo-instruct', 'cl100k_base'],
    ['azure/gpt-35-turbo', 'cl100k_base'],
    ['ft:gpt-4-0613:acme::abc123', 'cl100k_base'],
    ['ft:gpt-3.5-turbo-0125:acme::abc123', 'cl100k_base'],
    ['text-embedding-3-small', 'cl100k_base'],
    ['text-embedding-ada-002', 'cl100k_base'],
    ['davinci-002', 'cl100k_base'],
    ['claude-sonnet-4', 'o200k_base'],
    ['llama-3.1-70b', 'o200k_base'],
    ['', 'o200k_base'],
  ])('%s → %s', (model, encoding) => {
    expect(encodingForModel(model)).toBe(encoding);
  });
});
