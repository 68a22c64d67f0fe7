import { describe, expect, it } from 'vitest';
import { TokenBuckets } from './token-buckets';

describe('TokenBuckets', () => {
  it('spends a burst of `capacity`, then earns a token every `refillMs`, never more than it holds', () => {
    let now = 0;
    const buckets = new TokenBuckets({ capacity: 2, refillMs: 1_500, now: () => now });
    expect([buckets.take('a'), buckets.take('a')]).toEqual([0, 0]);
    // Whole seconds until the next token, at least 1.
    expect(buckets.take('a')).toBe(2);
    now += 1_000;
    expect(buckets.take('a')).toBe(1);
    now += 500;
    expect(buckets.take('a')).toBe(0);
    // A refund gives a token back; an hour idle fills the bucket, not more.
    buckets.refund('a');
    expect(buckets.take('a')).toBe(0);
    now += 3_600_000;
    expect([buckets.take('a'), buckets.take('a'), buckets.take('a')]).toEqual([0, 0, 2]);
    // Keys do not share.
    expect(buckets.take('b')).toBe(0);
  });

  it('remembers at most `maxKeys` buckets, forgetting full ones first', () => {
    let now = 0;
    const buckets = new TokenBuckets({ capacity: 1, refillMs: 60_000, maxKeys: 3, now: () => now });
    for (const key of ['a', 'b', 'c']) buckets.take(key);
    now += 60_000;
    buckets.take('c');
    // a and b have refilled: forgetting them loses nothing; c, just spent, is kept.
    buckets.take('d');
    expect(buckets.size).toBe(2);
    expect(buckets.take('c')).toBe(60);
    for (let i = 0; i < 100; i++) buckets.take(`k${i}`);
    expect(buckets.size).toBeLessThanOrEqual(3);
  });
});
