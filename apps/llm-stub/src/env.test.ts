import { describe, expect, it } from 'vitest';
import { parseEnv } from './env';

describe('parseEnv', () => {
  it('defaults to a local port with no faults', () => {
    expect(parseEnv({})).toEqual({
      port: 4010,
      host: '127.0.0.1',
      apiKey: null,
      models: undefined,
      streamPieceChars: undefined,
      faults: {},
    });
  });

  it('reads PORT, HOST, models and every fault setting', () => {
    const env = parseEnv({
      PORT: '0',
      HOST: '0.0.0.0',
      LLM_STUB_API_KEY: 'sk-test',
      LLM_STUB_MODELS: 'a, b,,c',
      LLM_STUB_LATENCY_MS: '25',
      LLM_STUB_STATUS: '429',
      LLM_STUB_RETRY_AFTER: '2',
      LLM_STUB_ERROR_BODY: 'none',
      LLM_STUB_OUTPUT: 'echo',
      LLM_STUB_DROP: 'mid-body',
      LLM_STUB_CONTEXT_WINDOW: '8192',
      LLM_STUB_BARRIER: '2',
      LLM_STUB_FAULT_TIMES: '3',
      LLM_STUB_AGENT_STEPS: '4',
    });
    expect(env).toMatchObject({ port: 0, host: '0.0.0.0', apiKey: 'sk-test', models: ['a', 'b', 'c'] });
    expect(env.faults).toEqual({
      latencyMs: 25,
      status: 429,
      retryAfterSeconds: 2,
      errorBody: 'none',
      output: 'echo',
      drop: 'mid-body',
      contextWindow: 8192,
      barrier: 2,
      agentSteps: 4,
      times: 3,
    });
  });

  it.each([
    ['PORT', 'x'],
    ['LLM_STUB_STATUS', '42'],
    ['LLM_STUB_OUTPUT', 'nonsense'],
    ['LLM_STUB_DROP', 'sometimes'],
    ['LLM_STUB_AGENT_STEPS', '0'],
  ])('rejects %s=%s', (key, value) => {
    expect(() => parseEnv({ [key]: value })).toThrow();
  });
});
