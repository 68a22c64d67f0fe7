/**
 * Holds requests until `size` of them wait together, then releases them all. Lets a test prove
 * that a client really has two requests in flight at once without measuring time: sequential
 * requests would never meet at the barrier.
 */
export class Barrier {
  private readonly waiting = new Set<() => void>();

  wait(size: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const release = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.waiting.delete(release);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.add(release);
      if (this.waiting.size >= size) {
        const released = [...this.waiting];
        this.waiting.clear();
        for (const go of released) go();
      }
    });
  }
}
