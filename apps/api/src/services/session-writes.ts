import { ApiError } from '../http/errors';

/**
 * Writes to one session (appends, PATCHes) take the session's row lock one at a time anyway.
 * Waiting for it inside a transaction holds a pool connection: 12 concurrent large appends to
 * one session filled the 10-connection pool and every other tenant's read waited 8–13 s. So a
 * process runs one write per session at a time and the others wait here, in memory, without a
 * connection; past `maxWaiting` queued writes a session's next one is refused with 429 and a
 * Retry-After (one session cannot queue without bound either). Across API replicas each holds
 * at most one connection per session.
 */
export class SessionWriteQueue {
  private readonly sessions = new Map<string, { tail: Promise<unknown>; queued: number }>();

  constructor(private readonly maxWaiting: number) {}

  /** Runs `write` once the session's earlier writes in this process are done ({@link sessionKey}). */
  async run<T>(session: string, write: () => Promise<T>): Promise<T> {
    const entry = this.sessions.get(session) ?? { tail: Promise.resolve(), queued: 0 };
    if (entry.queued > this.maxWaiting) {
      throw new ApiError(
        429,
        'too_many_requests',
        'too many writes to this session are waiting; retry shortly',
        {
          retryAfterSeconds: 1,
        },
      );
    }
    entry.queued += 1;
    this.sessions.set(session, entry);
    const result = entry.tail.then(write, write);
    // The next write waits for this one, whatever its outcome; the entry goes with the last.
    entry.tail = result.then(
      () => undefined,
      () => undefined,
    );
    try {
      return await result;
    } finally {
      entry.queued -= 1;
      if (entry.queued === 0) this.sessions.delete(session);
    }
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
