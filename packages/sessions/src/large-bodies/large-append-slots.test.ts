import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors';
import { LargeAppendSlots } from './large-append-slots';

describe('LargeAppendSlots', () => {
  it('refuses past its limit with a 429 and a Retry-After, and takes again once a slot is released', () => {
    const slots = new LargeAppendSlots(2);
    const first = slots.take();
    slots.take();
    let refused: unknown;
    try {
      slots.take();
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({
      status: 429,
      code: 'too_many_requests',
      details: { retryAfterSeconds: 2 },
    });
    first();
    first(); // a second release of the same slot frees nothing more
    expect(slots.inFlight).toBe(1);
    slots.take();
    expect(() => slots.take()).toThrow(ApiError);
  });
});
