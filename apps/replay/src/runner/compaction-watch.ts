/**
 * Follows a session's event stream (SSE) for the replay: which compactions ended, which follow-up
 * each completed one named, and how many prune jobs reported, with waits that wake on the event
 * and fall back to polling the API (a reconnect resumes only from what the API's event history
 * still holds, so an event lost to a broken stream must not hang the run).
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
  /** The follow-up each completed compaction's `session.compacted` named. */
  private readonly followUps = new Map<string, string>();
  private wakers = new Set<() => void>();
  prunes = { jobs: 0, parts: 0, tokens: 0 };

  /** Feed every event of the session's stream here. */
  onEvent = (event: SessionEventMessage): void => {
    const status = TERMINAL_EVENTS[event.type];
    if (status && event.compactionId) this.markEnded(event.compactionId, status);
    if (event.type === 'session.compacted' && event.compactionId && event.data.followUp) {
      this.followUps.set(event.compactionId, event.data.followUp.compactionId);
    }
    if (event.type === 'prune.completed') {
      this.prunes.jobs++;
      this.prunes.parts += event.data.parts;
      this.prunes.tokens += event.data.tokens;
    }
    this.wake();
  };

  private markEnded(id: string, status: string, at = Date.now()): void {
    this.ended.set(id, status);
    if (!this.endedTimes.has(id)) this.endedTimes.set(id, at);
  }

  /** When the run learnt that compaction `id` ended (its event, or the poll that saw it). */
  endedAt(id: string): number | undefined {
    return this.endedTimes.get(id);
  }

  /** The compaction requested with compaction `id`'s completion (its `session.compacted` said so). */
  followUpOf(id: string): string | undefined {
    return this.followUps.get(id);
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
   * Waits until compaction `id` has ended, as its event says. `poll` (reading the row) backs up
   * an event lost to a broken stream: a poll that finds the row ended is trusted only once the
   * event has had another `pollMs` to come, so the run goes on from the event (sent once a
   * follow-up, if any, was requested, and followed by the `session.compacted` naming it) and
   * the poll decides only when the event is lost. Returns its status, or `null` after `timeoutMs`.
   */
  async untilEnded(
    id: string,
    timeoutMs: number,
    poll: () => Promise<string>,
    pollMs = 1_000,
  ): Promise<string | null> {
    const deadline = Date.now() + timeoutMs;
    let nextPoll = Date.now() + pollMs;
    let polled: { status: string; at: number } | null = null;
    for (;;) {
      const status = this.ended.get(id);
      if (status) return status;
      if (polled && (Date.now() >= polled.at + pollMs || Date.now() >= deadline)) {
        this.markEnded(id, polled.status, polled.at);
        return polled.status;
      }
      if (Date.now() >= deadline) return null;
      if (!polled && Date.now() >= nextPoll) {
        const found = await poll();
        if (TERMINAL_STATUSES.has(found)) polled = { status: found, at: Date.now() };
        nextPoll = Date.now() + pollMs;
      }
      const wakeAt = polled ? polled.at + pollMs : nextPoll;
      await this.nextEvent(Math.max(1, Math.min(wakeAt, deadline) - Date.now()));
    }
  }

  /** Waits until more than `seen` prune jobs have reported, at most `ms`. */
  async untilPruned(seen: number, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.prunes.jobs <= seen && Date.now() < deadline) await this.nextEvent(deadline - Date.now());
  }
}
