/**
 * Answers stored after the client has them. Storing an answer (its slot check, the assistant
 * message, its link) costs three round trips that the client need not wait for: what it needs is
 * that its next request, or an identical retry, finds the answer stored. In this process that
 * request waits here for the stores still running that it could continue from, before it
 * resolves its conversation. Elsewhere, or when this process stopped before the store ended,
 * nothing acknowledged is lost: the client holds the answer and its next request echoes it,
 * which is then stored as a client message (the late store, if it ever runs, finds that element
 * linked and leaves it).
 */

/** The stores a request may wait for: by tenant (every conversation) and by conversation key. */
export class PendingAnswers {
  private readonly byKey = new Map<string, Set<Promise<void>>>();

  /** Registers a running store under `keys`; it leaves them when it ends (it never rejects). */
  track(keys: readonly string[], store: Promise<void>): void {
    for (const key of keys) {
      let running = this.byKey.get(key);
      if (!running) {
        running = new Set();
        this.byKey.set(key, running);
      }
      running.add(store);
    }
    void store.finally(() => {
      for (const key of keys) {
        const running = this.byKey.get(key);
        running?.delete(store);
        if (running?.size === 0) this.byKey.delete(key);
      }
    });
  }

  /** Resolves once the stores registered under `key` by now have ended. */
  async settled(key: string): Promise<void> {
    const running = this.byKey.get(key);
    if (running) await Promise.all([...running]);
  }

  /** Resolves once every store registered by now has ended (a server closing, a test reading the store). */
  async allSettled(): Promise<void> {
    const running = new Set<Promise<void>>();
    for (const stores of this.byKey.values()) for (const store of stores) running.add(store);
    await Promise.all([...running]);
  }
}

/** The process's pending answers (the API answers every drop-in request of the process). */
export const pendingAnswers = new PendingAnswers();

/** Every store of the tenant: what a request without `X-Compactor-Session` may continue from. */
export const tenantAnswersKey = (tenantId: string) => JSON.stringify([tenantId]);

/** The stores of one conversation key (the `X-Compactor-Session` its sessions were created under). */
export const conversationAnswersKey = (tenantId: string, conversationKey: string) =>
  JSON.stringify([tenantId, conversationKey]);

/** Resolves once every drop-in answer this process has begun to store is stored (or failed to be). */
export function answersStored(): Promise<void> {
  return pendingAnswers.allSettled();
}
