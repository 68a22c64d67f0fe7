/** What a {@link TokenBuckets} allows each key. */
export interface TokenBucketOptions {
  /** Tokens a full bucket holds: the burst a key may spend at once. */
  capacity: number;
  /** Milliseconds to earn one token back. */
  refillMs: number;
  /** Buckets remembered at once; past it, full buckets are forgotten (a full one is the same as none). */
  maxKeys?: number;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * One token bucket per key, in memory: a key spends a token per action and earns them back at
 * a steady rate, up to `capacity`. What it counts is this process's actions only.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly now: () => number;
  private readonly maxKeys: number;

  constructor(private readonly options: TokenBucketOptions) {
    this.now = options.now ?? Date.now;
    this.maxKeys = options.maxKeys ?? 10_000;
  }

  /** Spends one of the key's tokens: 0 when it had one, else whole seconds until it will (at least 1). */
  take(key: string): number {
    const bucket = this.current(key);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * this.options.refillMs) / 1000));
  }

  /** Gives back a token taken for an action that did not happen. */
  refund(key: string): void {
    const bucket = this.current(key);
    bucket.tokens = Math.min(this.options.capacity, bucket.tokens + 1);
  }

  /** Keys remembered (tests: memory stays bounded). */
  get size(): number {
    return this.buckets.size;
  }

  /** The key's bucket, refilled up to now (created full). */
  private current(key: string): Bucket {
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.forgetFull(now);
      bucket = { tokens: this.options.capacity, at: now };
      this.buckets.set(key, bucket);
      return bucket;
    }
    const earned = (now - bucket.at) / this.options.refillMs;
    bucket.tokens = Math.min(this.options.capacity, bucket.tokens + Math.max(0, earned));
    bucket.at = now;
    return bucket;
  }

  /** Drops the buckets that have refilled; when none has, the one created first. */
  private forgetFull(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) / this.options.refillMs >= this.options.capacity)
        this.buckets.delete(key);
    }
    if (this.buckets.size >= this.maxKeys) {
      const oldest = this.buckets.keys().next();
      if (!oldest.done) this.buckets.delete(oldest.value);
    }
  }
}
