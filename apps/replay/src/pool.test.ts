import { describe, expect, it } from 'vitest';
import { mapConcurrent } from './pool';

describe('mapConcurrent', () => {
  it('keeps the order and never runs more than the limit at once', async () => {
    let running = 0;
    let most = 0;
    const results = await mapConcurrent([30, 5, 20, 1, 10], 2, async (delay, i) => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, delay));
      running--;
      return i * 10;
    });
    expect(results).toEqual([0, 10, 20, 30, 40]);
    expect(most).toBe(2);
  });
});
