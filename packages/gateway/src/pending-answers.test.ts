import { describe, expect, it } from 'vitest';
import { PendingAnswers } from './pending-answers';

/** A store the test ends when it wants. */
function store(): { promise: Promise<void>; end: () => void } {
  let end!: () => void;
  const promise = new Promise<void>((resolve) => (end = resolve));
  return { promise, end };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('answers stored after the client has them', () => {
  it('holds a request of the same key until the stores registered before it end, and no other key', async () => {
    const pending = new PendingAnswers();
    const first = store();
    const second = store();
    pending.track(['tenant', 'tenant/conversation-1'], first.promise);
    pending.track(['tenant', 'tenant/conversation-2'], second.promise);

    const order: string[] = [];
    const conversation1 = pending.settled('tenant/conversation-1').then(() => order.push('conversation-1'));
    const tenant = pending.settled('tenant').then(() => order.push('tenant'));
    await pending.settled('another tenant');
    await tick();
    expect(order).toEqual([]);

    first.end();
    await conversation1;
    await tick();
    expect(order).toEqual(['conversation-1']);

    second.end();
    await tenant;
    expect(order).toEqual(['conversation-1', 'tenant']);
  });

  it('forgets a store once it ended: a later wait returns at once, and allSettled waits for every key', async () => {
    const pending = new PendingAnswers();
    const ended = store();
    pending.track(['a'], ended.promise);
    ended.end();
    await ended.promise;
    await tick();
    let returned = false;
    await pending.settled('a').then(() => (returned = true));
    expect(returned).toBe(true);

    const open = store();
    pending.track(['b'], open.promise);
    let all = false;
    const waiting = pending.allSettled().then(() => (all = true));
    await tick();
    expect(all).toBe(false);
    open.end();
    await waiting;
    expect(all).toBe(true);
  });
});
