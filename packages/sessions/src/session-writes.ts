import { SessionWritesQueued } from './errors';

/**
 * Writes to one session (appends, PATCHes) take the session's row lock one at a time anyway.
 * Waiting for it inside a transaction holds a pool connection: 12 concurrent large appends to
 * one session filled the 10-connection pool and every other tenant's read waited 8–13 s. So a
 * process runs one write per session at a time and the others wait here, in memory, without a
 * connection; past `maxWaiting` queued writes a session's next one is refused
 * ({@link SessionWritesQueued}, with when to retry) (one session cannot queue without bound either). An append takes its place with
 * {@link reserve} before it counts its batch, so a refused one has cost no counting: 50 concurrent
 * appends to one session were all counted, the 17 refused ones included, on the event loop that
 * serves every other tenant. Across API replicas each holds at most one connection per session.
 */
export class SessionWriteQueue {
  private readonly sessions = new Map<string, { tail: Promise<unknown>; queued: number }>();

  constructor(private readonly maxWaiting: number) {}

  /** Runs `write` once the session's earlier writes in this process are done ({@link sessionKey}). */
  async run<T>(session: string, write: () => Promise<T>): Promise<T> {
    return this.reserve(session).run(write);
  }

  /**
   * A place in the session's queue, taken now (or {@link SessionWritesQueued}), for a write that runs later, in the
   * order of the `run` calls. Release it when the write will not run (a release after `run` is
   * a no-op).
   */
  reserve(session: string): SessionWritePlace {
    const entry = this.sessions.get(session) ?? { tail: Promise.resolve(), queued: 0 };
    if (entry.queued > this.maxWaiting) {
      throw new SessionWritesQueued('too many writes to this session are waiting; retry shortly', 1);
    }
    entry.queued += 1;
    this.sessions.set(session, entry);
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      entry.queued -= 1;
      if (entry.queued === 0 && this.sessions.get(session) === entry) this.sessions.delete(session);
    };
    return {
      run: async <T>(write: () => Promise<T>): Promise<T> => {
        const result = entry.tail.then(write, write);
        // The next write waits for this one, whatever its outcome; the entry goes with the last.
        entry.tail = result.then(
          () => undefined,
          () => undefined,
        );
        try {
          return await result;
        } finally {
          leave();
        }
      },
      release: leave,
    };
  }

  /** Writes queued or running, over all sessions (for tests and metrics). */
  get size(): number {
    let total = 0;
    for (const entry of this.sessions.values()) total += entry.queued;
    return total;
  }
}

/** A session as the process keys its writes and caches: by the ids its clients name it with. */
export const sessionKey = (tenantId: string, id: string) => JSON.stringify([tenantId, id]);

/** A place in a session's write queue (see {@link SessionWriteQueue.reserve}). */
export interface SessionWritePlace {
  run<T>(write: () => Promise<T>): Promise<T>;
  release(): void;
}
