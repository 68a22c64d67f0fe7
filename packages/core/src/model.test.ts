import { describe, expect, it } from 'vitest';
import { assertNever, isToolPart, type Part } from './model';

describe('model helpers', () => {
  it('recognises tool parts', () => {
    const tool: Part = {
      type: 'tool',
      callId: 'c',
      tool: 'read',
      status: 'completed',
      input: {},
      output: 'x',
      error: null,
      compactedAt: null,
      tokens: 3,
      outputTokens: 1,
    };
    expect(isToolPart(tool)).toBe(true);
    expect(isToolPart({ type: 'text', text: 'hi', tokens: 1 })).toBe(false);
  });
  it('assertNever throws with the value', () => {
    expect(() => assertNever('x' as never, 'part')).toThrow('unexpected part: "x"');
  });
});
