import type { LlmStub, LlmStubOptions } from '@compactor/llm-stub';
import { startLlmStub } from '@compactor/llm-stub';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { LlmConfig } from '../llm';

/**
 * One stub server per test file, its faults reset after each test. Returns a getter because the
 * server starts in `beforeAll`.
 */
export function useLlmStub(options: LlmStubOptions = {}): () => LlmStub {
  let stub: LlmStub | undefined;
  beforeAll(async () => {
    stub = await startLlmStub(options);
  });
  afterEach(() => stub?.setFaults({}));
  afterAll(() => stub?.close());
  return () => {
    if (!stub) throw new Error('the LLM stub is not started yet');
    return stub;
  };
}

/** A client configuration for the stub; `headers` become `x-stub-*` fault headers on every request. */
export function stubConfig(stub: LlmStub, overrides: Partial<LlmConfig> = {}): LlmConfig {
  return { apiKey: 'sk-stub', baseURL: stub.url, timeoutMs: 10_000, ...overrides };
}
