import { describe, expect, it } from 'vitest';
import { TenantLimitReached, TenantLimits, type TenantLimitName } from './tenant-limits';

describe('TenantLimits.openEventStream', () => {
  it("refuses a tenant's stream past its cap, saying which limit and when to retry; a release frees it", () => {
    const rejected: TenantLimitName[] = [];
    const limits = new TenantLimits({ maxEventStreams: 2 }, { rejected: (limit) => rejected.push(limit) });
    const first = limits.openEventStream('tenant-a');
    limits.openEventStream('tenant-a');
    let refused: unknown;
    try {
      limits.openEventStream('tenant-a');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(TenantLimitReached);
    expect(refused).toMatchObject({
      limit: 'event_streams',
      retryAfterSeconds: 5,
      message: 'this tenant already has 2 event streams open (its limit); close one or retry later',
    });
    expect(rejected).toEqual(['event_streams']);
    // Another tenant has its own places; releasing twice frees one place only.
    expect(() => limits.openEventStream('tenant-b')).not.toThrow();
    first();
    first();
    expect(limits.eventStreamsOf('tenant-a')).toBe(1);
    expect(() => limits.openEventStream('tenant-a')).not.toThrow();
  });
});
