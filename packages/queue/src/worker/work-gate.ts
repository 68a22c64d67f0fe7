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
   * Waits for a place, in arrival order. An aborted `signal` gives up the wait (rejecting with an
   * `AbortError`) without taking a place; the place's own waits (taking it back after an LLM
   * call) give up on it too.
   */
  async enter(signal?: AbortSignal): Promise<GatePlace> {
    await this.take(signal);
    return new GatePlace(this, signal);
  }

  /** @internal Takes a place, waiting behind every earlier taker. */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
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
        reject(abortError(signal!));
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

/**
 * One job's place in a {@link WorkGate}, held from `enter` to `leave` except while the job waits
 * outside. Whether it is held is tracked, not inferred from the count of waits: a wait that
 * starts while the place is being taken back, or a `leave` then, must neither give away a place
 * the job does not hold nor keep one it no longer needs.
 */
export class GatePlace {
  private holding = true;
  private outsideCount = 0;
  private left = false;
  private retaking: Promise<void> | null = null;

  constructor(
    private readonly gate: WorkGate,
    private readonly signal?: AbortSignal,
  ) {}

  /**
   * Runs `wait` (an LLM call) without the place. Concurrent waits of one job give it up once;
   * the last to end takes it back, behind whoever queued meanwhile.
   */
  async outside<T>(wait: () => Promise<T>): Promise<T> {
    if (this.left) throw new Error('the place was left');
    if (this.outsideCount++ === 0) this.release();
    try {
      return await wait();
    } finally {
      if (--this.outsideCount === 0 && !this.left) await this.retake();
    }
  }

  /** Gives the place up for good (idempotent); one being taken back is given up once it comes. */
  leave(): void {
    if (this.left) return;
    this.left = true;
    this.release();
  }

  private release(): void {
    if (!this.holding) return;
    this.holding = false;
    this.gate.give();
  }

  private retake(): Promise<void> {
    if (this.holding) return Promise.resolve();
    this.retaking ??= this.gate.take(this.signal).then(
      () => {
        this.retaking = null;
        this.holding = true;
        // Left meanwhile, or a new wait went outside meanwhile: not needed now.
        if (this.left || this.outsideCount > 0) this.release();
      },
      (error: unknown) => {
        this.retaking = null;
        throw error;
      },
    );
    return this.retaking;
  }
}

/** The signal's reason as an `AbortError` (what the workflow treats as a cancellation). */
function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  return new DOMException(
    reason instanceof Error ? reason.message : String(reason ?? 'aborted'),
    'AbortError',
  );
}
