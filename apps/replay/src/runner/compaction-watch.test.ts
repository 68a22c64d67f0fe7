import { describe, expect, it } from 'vitest';
import type { SessionEventMessage } from '@compactor/client';
import { CompactionWatch } from './compaction-watch';

const sizes = {
  tokensBefore: 5_000,
  tokensAfter: 4_000,
  messagesBefore: 40,
  messagesAfter: 12,
  boundarySeq: 30,
  fallback: null,
};

function event(type: string, compactionId: string, data: Record<string, unknown> = {}): SessionEventMessage {
  return {
    type,
    sessionId: 's1',
    compactionId,
    at: new Date().toISOString(),
    data,
  } as unknown as SessionEventMessage;
}

const later = (ms: number, run: () => void) => setTimeout(run, ms);

describe('CompactionWatch.untilEnded', () => {
  it('goes on from the event: a poll that found the row completed waits for it', async () => {
    const watch = new CompactionWatch();
    let polls = 0;
    const poll = () => {
      polls++;
      return Promise.resolve('completed');
    };
    // The poll sees `completed` at 100 ms; the events come 50 ms later, naming a follow-up.
    later(150, () => {
      watch.onEvent(event('compaction.completed', 'c1', sizes));
      watch.onEvent(event('session.compacted', 'c1', { ...sizes, followUp: { compactionId: 'c2' } }));
    });
    const started = Date.now();
    expect(await watch.untilEnded('c1', 5_000, poll, 100)).toBe('completed');
    expect(polls).toBe(1);
    // Woken by the event, not by the poll: the ended time is the event's.
    expect(watch.endedAt('c1')! - started).toBeGreaterThanOrEqual(140);
    // The follow-up its session.compacted named arrives with it, or just after.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(watch.followUpOf('c1')).toBe('c2');
  });

  it('concludes from the poll when the event is lost, as of the poll', async () => {
    const watch = new CompactionWatch();
    const started = Date.now();
    expect(await watch.untilEnded('c1', 5_000, () => Promise.resolve('failed'), 50)).toBe('failed');
    const ended = watch.endedAt('c1')! - started;
    expect(ended).toBeGreaterThanOrEqual(45);
    // The poll's time, not the end of the wait for the event after it.
    expect(Date.now() - started).toBeGreaterThanOrEqual(ended + 45);
    expect(watch.followUpOf('c1')).toBeUndefined();
  });

  it('returns null when neither the event nor a poll says it ended in time', async () => {
    const watch = new CompactionWatch();
    expect(await watch.untilEnded('c1', 60, () => Promise.resolve('running'), 20)).toBeNull();
  });
});
