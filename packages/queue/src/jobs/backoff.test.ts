import { describe, expect, it } from 'vitest';
import { retryAfterOf, retryDelayMs } from './backoff';

describe('retryDelayMs', () => {
  it.each([
    // attemptsMade, random → delay (base 1000 ms: ceiling doubles, half of it is jitter)
    [1, 0, 500],
    [1, 1, 1_000],
    [2, 0, 1_000],
    [3, 0.5, 3_000],
    [20, 1, 300_000], // capped at 5 minutes
  ])('after %i failed tries with random %f → %i ms', (attemptsMade, random, expected) => {
    expect(retryDelayMs(attemptsMade, 1_000, new Error('x'), () => random)).toBe(expected);
  });

  it("never retries sooner than the provider's Retry-After", () => {
    const rateLimited = Object.assign(new Error('429'), { retryAfterMs: 20_000 });
    expect(retryDelayMs(1, 1_000, rateLimited, () => 0)).toBe(20_000);
    expect(retryDelayMs(1, 1_000, Object.assign(new Error('429'), { retryAfterMs: 10 }), () => 0)).toBe(500);
  });

  it('ignores a Retry-After that is not a finite, non-negative number', () => {
    for (const retryAfterMs of [NaN, -1, Infinity, '5', null]) {
      expect(retryAfterOf(Object.assign(new Error('x'), { retryAfterMs }))).toBeNull();
    }
  });
});
