import { describe, expect, it } from 'vitest';
import { SessionWritesQueued } from './errors';
import { SessionWriteQueue } from './session-writes';

describe('SessionWriteQueue', () => {
  it('counts a reserved place as waiting: past the limit the next reservation is refused, before any work', () => {
    const writes = new SessionWriteQueue(1);
    const first = writes.reserve('s');
    writes.reserve('s');
    expect(() => writes.reserve('s')).toThrow(SessionWritesQueued);
    // Another session has its own queue.
    expect(() => writes.reserve('other').release()).not.toThrow();
    first.release();
    expect(writes.size).toBe(1);
    expect(() => writes.reserve('s')).not.toThrow();
  });

  it('runs reserved writes one at a time, in the order of their run calls, and forgets an idle session', async () => {
    const writes = new SessionWriteQueue(8);
    const [early, late] = [writes.reserve('s'), writes.reserve('s')];
    const order: string[] = [];
    let releaseFirst!: () => void;
    const first = late.run(
      () =>
        new Promise<void>((resolve) => {
          order.push('late started');
          releaseFirst = () => {
            order.push('late done');
            resolve();
          };
        }),
    );
    const second = early.run(async () => {
      order.push('early started');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['late started']);
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['late started', 'late done', 'early started']);
    early.release(); // after its run: nothing more to free
    expect(writes.size).toBe(0);
  });
});
