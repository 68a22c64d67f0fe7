/**
 * Follows a session's event stream (SSE) for the replay: which compactions ended and how many
 * prune jobs reported, with waits that wake on the event and fall back to polling the API (a
 * reconnect resumes only from what the API's event history still holds, so an event lost to a
 * broken stream must not hang the run).
 */
import type { SessionEventMessage } from '@compactor/client';

const TERMINAL_EVENTS: Record<string, string> = {
  'compaction.completed': 'completed',
  'compaction.failed': 'failed',
  'compaction.skipped': 'skipped',
};
export const TERMINAL_STATUSES = new Set(['completed', 'failed', 'skipped']);

export class CompactionWatch {
  private readonly ended = new Map<string, string>();
  /** When the run learnt that each compaction ended (ms since the epoch). */
  private readonly endedTimes = new Map<string, number>();
  private wakers = new Set<() => void>();
  prunes = { jobs: 0, parts: 0, tokens: 0 };

  /** Feed every event of the session's stream here. */
  onEvent = (event: SessionEventMessage): void => {
    const status = TERMINAL_EVENTS[event.type];
    if (status && event.compactionId) this.markEnded(event.compactionId, status);
    if (event.type === 'prune.completed') {
      this.prunes.jobs++;
      this.prunes.parts += event.data.parts;
      this.prunes.tokens += event.data.tokens;
    }
    this.wake();
  };

  private markEnded(id: string, status: string): void {
    this.ended.set(id, status);
    if (!this.endedTimes.has(id)) this.endedTimes.set(id, Date.now());
  }

  /** When the run learnt that compaction `id` ended (its event, or the poll that saw it). */
  endedAt(id: string): number | undefined {
    return this.endedTimes.get(id);
  }

  /** The status a compaction ended with, if an event said so. */
  endedWith(id: string): string | undefined {
    return this.ended.get(id);
  }

  private wake(): void {
    const wakers = this.wakers;
    this.wakers = new Set();
    for (const wake of wakers) wake();
  }

  /** Resolves at the next event, or after `ms`. */
  private nextEvent(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakers.add(done);
    });
  }

  /**
   * Waits until compaction `id` has ended: the event says so, or `poll` (reading the row) does.
   * Returns its status, or `null` after `timeoutMs`.
   */
  async untilEnded(
    id: string,
    timeoutMs: number,
    poll: () => Promise<string>,
    pollMs = 1_000,
  ): Promise<string | null> {
    const deadline = Date.now() + timeoutMs;
    let nextPoll = Date.now() + pollMs;
    for (;;) {
      const status = this.ended.get(id);
      if (status) return status;
      if (Date.now() >= deadline) return null;
      if (Date.now() >= nextPoll) {
        const polled = await poll();
        if (TERMINAL_STATUSES.has(polled)) {
          this.markEnded(id, polled);
          return polled;
        }
        nextPoll = Date.now() + pollMs;
      }
      await this.nextEvent(Math.max(1, Math.min(nextPoll, deadline) - Date.now()));
    }
  }

  /** Waits until more than `seen` prune jobs have reported, at most `ms`. */
  async untilPruned(seen: number, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.prunes.jobs <= seen && Date.now() < deadline) await this.nextEvent(deadline - Date.now());
  }
}
