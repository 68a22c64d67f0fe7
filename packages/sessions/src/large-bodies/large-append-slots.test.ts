import { describe, expect, it } from 'vitest';
import { LargeAppendsBusy } from '../errors';
import { LargeAppendSlots } from './large-append-slots';

describe('LargeAppendSlots', () => {
  it('refuses past its limit, saying when to retry, and takes again once a slot is released', () => {
    const slots = new LargeAppendSlots(2);
    const first = slots.take();
    slots.take();
    let refused: unknown;
    try {
      slots.take();
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(LargeAppendsBusy);
    expect(refused).toMatchObject({ retryAfterSeconds: 2 });
    first();
    first(); // a second release of the same slot frees nothing more
    expect(slots.inFlight).toBe(1);
    slots.take();
    expect(() => slots.take()).toThrow(LargeAppendsBusy);
  });
});
