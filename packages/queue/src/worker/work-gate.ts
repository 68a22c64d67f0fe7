/**
 * A first-come-first-served limit on how many jobs of one worker process do their database and
 * CPU work at once. A compaction waiting on the LLM steps outside and holds no place.
 *
 * Why: a worker runs dozens of jobs on one event loop, and most of a compaction's time is its
 * LLM call. When many are ready at once (their LLM answers arrive together), interleaving all
 * their statements makes each one wait for the whole burst: they finish together, call the LLM
 * again together, and the burst never spreads. Admitted a few at a time in arrival order, the
 * first finishes first and the calls spread out (docs/BENCHMARKS.md, stop 19).
 */
export class WorkGate {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly places: number) {
    if (!Number.isInteger(places) || places < 1) throw new RangeError('a work gate needs at least one place');
    this.free = places;
  }

  /** Jobs waiting for a place (metrics). */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Waits for a place, in arrival order. An aborted `signal` gives up the wait (rejecting with
   * its reason) without taking a place.
   */
  async enter(signal?: AbortSignal): Promise<GatePlace> {
    await this.take(signal);
    return new GatePlace(this);
  }

  /** @internal Takes a place, waiting behind every earlier taker. */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const admit = () => {
        signal?.removeEventListener('abort', abandon);
        resolve();
      };
      const abandon = () => {
        const index = this.waiting.indexOf(admit);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', abandon, { once: true });
      this.waiting.push(admit);
    });
  }

  /** @internal Hands a place to the longest waiter, or frees it. */
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** One job's place in a {@link WorkGate}, held from `enter` to `leave` except while it waits outside. */
export class GatePlace {
  private outsideCount = 0;
  private left = false;

  constructor(private readonly gate: WorkGate) {}

  /**
   * Runs `wait` (an LLM call) without the place. Concurrent waits of one job (a split turn's
   * two summaries) give it up once; the last to end takes it again, behind whoever queued
   * meanwhile.
   */
  async outside<T>(wait: () => Promise<T>): Promise<T> {
    if (this.left) throw new Error('the place was left');
    if (this.outsideCount++ === 0) this.gate.give();
    try {
      return await wait();
    } finally {
      if (--this.outsideCount === 0 && !this.left) await this.gate.take();
    }
  }

  /** Gives the place up for good (idempotent). */
  leave(): void {
    if (this.left) return;
    this.left = true;
    if (this.outsideCount === 0) this.gate.give();
  }
}
