import { describe, expect, it } from 'vitest';
import {
  addSpend,
  InvalidSummaryError,
  LlmOverflowError,
  LlmRetryableError,
  NO_SPEND,
  spentOf,
  withSpent,
  type LlmSpend,
} from './errors';

const spend = (promptTokens: number, costUsd: number | null, calls: number): LlmSpend => ({
  usage: { promptTokens, completionTokens: promptTokens / 10, cachedPromptTokens: 0, reasoningTokens: 0 },
  costUsd,
  calls,
});

describe('spent', () => {
  it('sums field by field, an unknown cost staying unknown', () => {
    expect(addSpend(spend(100, 0.5, 1), spend(300, 0.25, 2))).toEqual(spend(400, 0.75, 3));
    expect(addSpend(spend(100, 0.5, 1), spend(300, null, 2)).costUsd).toBeNull();
    expect(addSpend(NO_SPEND, spend(10, 0, 1))).toEqual(spend(10, 0, 1));
  });

  it('is set on the same error, replacing what it carried', () => {
    const error = new LlmRetryableError('503', 'server', { status: 503 });
    expect(error.spent).toBeUndefined();
    expect(withSpent(error, spend(100, 0.5, 1))).toBe(error);
    expect(withSpent(error, spend(200, 1, 2))).toBe(error);
    expect(error.spent).toEqual(spend(200, 1, 2));
    expect(spentOf(error)).toEqual(spend(200, 1, 2));
    expect(error).toMatchObject({ kind: 'retryable', status: 503, reason: 'server' });
  });

  it('leaves the error alone when nothing was spent', () => {
    const error = new LlmOverflowError('too large', null);
    expect(withSpent(error, NO_SPEND).spent).toBeUndefined();
    expect(spentOf(error)).toBe(NO_SPEND);
    expect(spentOf(new Error('not an LLM error'))).toBe(NO_SPEND);
  });

  it('rebuilds an InvalidSummaryError with the total as its usage, keeping its partial summary', () => {
    const error = new InvalidSummaryError('empty', 2, {
      ...spend(100, 0.5, 2),
      partialSummary: '## Goal\nA.',
      partialSummaryCovers: 4,
    });
    expect(error.spent).toEqual(spend(100, 0.5, 2));
    const total = withSpent(error, spend(300, 1.5, 3));
    expect(total).toBeInstanceOf(InvalidSummaryError);
    expect(total).toMatchObject({
      reason: 'empty',
      attempts: 2,
      usage: spend(300, 1.5, 3).usage,
      costUsd: 1.5,
      spent: spend(300, 1.5, 3),
      partialSummary: '## Goal\nA.',
      partialSummaryCovers: 4,
    });
  });
});
