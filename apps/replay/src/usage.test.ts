import { describe, expect, it } from 'vitest';
import { measureOverhead, usageToSend, withCacheSplit, type UsageState } from './usage';

const recorded = { input: 4, cacheRead: 90_000, cacheWrite: 2_000, output: 300, reasoning: 100 };
const state = (changes: Partial<UsageState>): UsageState => ({
  contextReduced: true,
  window: 32_000,
  servedTokens: 21_000,
  estimate: 'stored',
  overhead: 0,
  mode: 'rescale',
  ...changes,
});

describe('usageToSend', () => {
  it('sends the recorded usage while nothing has been compacted', () => {
    expect(usageToSend(recorded, state({ contextReduced: false }))).toBe(recorded);
  });

  it('rescales from the start a recorded prompt no model of the replayed window could have sent', () => {
    // 92,004 prompt tokens replayed at a 4,096-token window: over the API's 10 windows.
    expect(usageToSend(recorded, state({ contextReduced: false, window: 4_096, overhead: 1_000 }))).toEqual({
      input: 22_000,
      cacheRead: 0,
      cacheWrite: 0,
      output: 300,
      reasoning: 100,
    });
    expect(usageToSend(recorded, state({ contextReduced: false, window: 16_000 }))).toBe(recorded);
    // An overhead measured mid-conversation larger than ten windows: no report, as in drop mode.
    expect(
      usageToSend(recorded, state({ contextReduced: false, window: 4_096, overhead: 50_000 })),
    ).toBeNull();
  });

  it('rescales the prompt to the served context plus the overhead, keeping the output', () => {
    expect(usageToSend(recorded, state({ overhead: 14_000 }))).toEqual({
      input: 35_000,
      cacheRead: 0,
      cacheWrite: 0,
      output: 300,
      reasoning: 100,
    });
  });

  it('adds no overhead to a hybrid estimate (its report already holds it)', () => {
    expect(usageToSend(recorded, state({ overhead: 14_000, estimate: 'hybrid' }))?.input).toBe(21_000);
  });

  it('drops it in drop mode, and sends none when the transcript had none', () => {
    expect(usageToSend(recorded, state({ mode: 'drop' }))).toBeNull();
    expect(usageToSend(undefined, state({}))).toBeNull();
  });
});

describe('measureOverhead', () => {
  it('is the recorded prompt beyond a stored estimate of the messages, never negative', () => {
    expect(measureOverhead(recorded, 2_004, 'stored')).toBe(90_000);
    expect(measureOverhead({ ...recorded, cacheRead: 0, cacheWrite: 0 }, 50, 'stored')).toBe(0);
    expect(measureOverhead(recorded, 2_004, 'hybrid')).toBeNull();
    expect(measureOverhead(null, 2_004, 'stored')).toBeNull();
  });
});

describe('withCacheSplit', () => {
  const sent = { input: 21_000, cacheRead: 0, cacheWrite: 0, output: 300, reasoning: 100 };
  it.each([
    // An explicit cache: what it did not read it wrote.
    [
      { read: 18_000, written: 3_000, uncached: 0 },
      { input: 0, cacheRead: 18_000, cacheWrite: 3_000 },
    ],
    // An automatic cache: the rest is plain input.
    [
      { read: 18_000, written: 0, uncached: 3_000 },
      { input: 3_000, cacheRead: 18_000, cacheWrite: 0 },
    ],
    // The simulated prompt lacks the overhead the usage counts: the difference is written too.
    [
      { read: 15_000, written: 2_000, uncached: 0 },
      { input: 0, cacheRead: 15_000, cacheWrite: 6_000 },
    ],
    // Reads never exceed the prompt reported.
    [
      { read: 25_000, written: 0, uncached: 0 },
      { input: 0, cacheRead: 21_000, cacheWrite: 0 },
    ],
  ])('%j → %j', (split, fields) => {
    expect(withCacheSplit(sent, split)).toEqual({ ...sent, ...fields });
  });
});
