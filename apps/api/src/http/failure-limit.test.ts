import { describe, expect, it } from 'vitest';
import { clientKey, FailureLimiter } from './failure-limit';

function limiter(maxClients = 100) {
  let now = 1_000_000;
  const limit = new FailureLimiter({ maxFailures: 3, windowMs: 60_000, maxClients, now: () => now });
  return { limit, advance: (ms: number) => (now += ms) };
}

describe('FailureLimiter', () => {
  it('refuses a client from its last allowed failure until the window that its first one opened ends', () => {
    const { limit, advance } = limiter();
    expect([limit.fail('a'), limit.fail('a')]).toEqual([false, false]);
    expect(limit.retryAfterSeconds('a')).toBe(0);
    advance(20_000);
    expect(limit.fail('a')).toBe(true);
    expect(limit.retryAfterSeconds('a')).toBe(40);
    expect(limit.retryAfterSeconds('b')).toBe(0);
    advance(39_001);
    expect(limit.retryAfterSeconds('a')).toBe(1);
    advance(999);
    expect(limit.retryAfterSeconds('a')).toBe(0);
    // A new window: the old failures are gone.
    expect(limit.fail('a')).toBe(false);
    expect(limit.retryAfterSeconds('a')).toBe(0);
  });

  it('forgets a client that succeeds', () => {
    const { limit } = limiter();
    limit.fail('a');
    limit.fail('a');
    limit.succeed('a');
    limit.fail('a');
    limit.fail('a');
    expect(limit.retryAfterSeconds('a')).toBe(0);
  });

  it('remembers at most maxClients, dropping expired windows first, then the oldest', () => {
    const { limit, advance } = limiter(2);
    for (let i = 0; i < 3; i++) limit.fail('old');
    advance(61_000);
    for (let i = 0; i < 3; i++) limit.fail('kept');
    for (let i = 0; i < 3; i++) limit.fail('new');
    expect(limit.retryAfterSeconds('kept')).toBeGreaterThan(0);
    expect(limit.retryAfterSeconds('new')).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) limit.fail('newest');
    expect(limit.retryAfterSeconds('kept')).toBe(0);
    expect(limit.retryAfterSeconds('new')).toBeGreaterThan(0);
    expect(limit.retryAfterSeconds('newest')).toBeGreaterThan(0);
  });
});

describe('clientKey', () => {
  it('keys IPv4 by address and IPv6 by its /64', () => {
    expect(clientKey('203.0.113.9')).toBe('203.0.113.9');
    expect(clientKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('2001:0db8:0000:0000:ffff::2')).toBe('2001:db8:0:0::/64');
    expect(clientKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('not an address')).toBe('not an address');
  });
});
