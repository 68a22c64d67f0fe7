/**
 * A first-come-first-served limit on how many jobs of one worker process do their database and
 * CPU work at once. A compaction waiting on the LLM steps outside and holds no place. Waiters
 * are admitted by rank first (the job's queue priority, lower first), then in arrival order: a
 * tenant's first compaction that the queue let ahead of another tenant's backlog is not put back
 * behind that backlog's jobs here, where it would wait once per step.
 *
 * Why: a worker runs dozens of jobs on one event loop, and most of a compaction's time is its
 * LLM call. When many are ready at once (their LLM answers arrive together), interleaving all
 * their statements makes each one wait for the whole burst: they finish together, call the LLM
 * again together, and the burst never spreads. Admitted a few at a time in arrival order, the
 * first finishes first and the calls spread out.
 */
export class WorkGate {
  private free: number;
  /** Sorted by rank, then arrival. */
  private readonly waiting: Array<{ rank: number; admit: () => void }> = [];

  constructor(readonly places: number) {
    if (!Number.isInteger(places) || places < 1) throw new RangeError('a work gate needs at least one place');
    this.free = places;
  }

  /** Jobs waiting for a place (metrics). */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Waits for a place, behind every waiter of a lower rank and every earlier one of the same
   * rank (0, the default, comes first). An aborted `signal` gives up the wait (rejecting with an
   * `AbortError`) without taking a place; the place's own waits (taking it back after an LLM
   * call, at the same rank) give up on it too.
   */
  async enter(signal?: AbortSignal, rank = 0): Promise<GatePlace> {
    await this.take(signal, rank);
    return new GatePlace(this, signal, rank);
  }

  /** @internal Takes a place, waiting behind every earlier taker of the same or a lower rank. */
  take(signal?: AbortSignal, rank = 0): Promise<void> {
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
        const index = this.waiting.findIndex((w) => w.admit === admit);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(abortError(signal!));
      };
      signal?.addEventListener('abort', abandon, { once: true });
      const behind = this.waiting.findLastIndex((w) => w.rank <= rank);
      this.waiting.splice(behind + 1, 0, { rank, admit });
    });
  }

  /** @internal Hands a place to the first waiter (lowest rank, then longest waiting), or frees it. */
  give(): void {
    const next = this.waiting.shift();
    if (next) next.admit();
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
    private readonly rank = 0,
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
    this.retaking ??= this.gate.take(this.signal, this.rank).then(
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
