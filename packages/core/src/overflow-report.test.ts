import { describe, expect, it } from 'vitest';
import type { ModelInfo } from './model';
import { classifyOverflow } from './overflow-report';
import { usage } from './test-support/builders';
import { finishesTurn } from './turns';

const model: ModelInfo = {
  id: 'm',
  provider: 'test',
  contextWindow: 10_000,
  maxOutputTokens: 1_000,
  inputLimit: null,
};

describe('classifyOverflow', () => {
  it('names a provider overflow error first, by the wording it matched', () => {
    const verdict = classifyOverflow(
      {
        error:
          "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        usage: usage(20_000, 0),
      },
      model,
    );
    expect(verdict.kind).toBe('error');
    expect(verdict.matched).toEqual(expect.any(String));
  });

  it('falls back to a reported prompt larger than the window, and is silent on anything else', () => {
    expect(classifyOverflow({ error: 'rate limited', status: 429, usage: usage(12_000, 5) }, model)).toEqual({
      kind: 'usage',
      matched: 'reported prompt larger than the context window',
    });
    expect(classifyOverflow({ usage: usage(5_000, 5), finish: 'stop' }, model)).toEqual({
      kind: null,
      matched: null,
    });
    expect(classifyOverflow({}, model)).toEqual({ kind: null, matched: null });
  });
});

describe('finishesTurn', () => {
  it('ends an assistant turn on any finish but tool calls', () => {
    expect(finishesTurn('assistant', 'stop')).toBe(true);
    expect(finishesTurn('assistant', 'length')).toBe(true);
    expect(finishesTurn('assistant', 'tool-calls')).toBe(false);
    expect(finishesTurn('assistant', null)).toBe(false);
    expect(finishesTurn('assistant', undefined)).toBe(false);
    expect(finishesTurn('user', 'stop')).toBe(false);
  });
});
