import { isIPv6 } from 'node:net';

/** What a {@link FailureLimiter} allows. */
export interface FailureLimitOptions {
  /** Failed attempts one client may make within `windowMs`; the next attempt is refused. */
  maxFailures: number;
  /** The window, counted from a client's first failure in it. */
  windowMs: number;
  /** Clients remembered at once; the oldest is forgotten first (bounds the memory an attacker can fill). */
  maxClients: number;
  now?: () => number;
}

interface Window {
  startedAt: number;
  failures: number;
}

/**
 * Counts failed attempts per client in a fixed window that opens with the client's first
 * failure: after `maxFailures` of them, every attempt until the window ends is refused without
 * being checked, so a refusal tells a guesser nothing about the guess. A success forgets the
 * client's failures. In memory, per process.
 */
export class FailureLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly now: () => number;

  constructor(private readonly options: FailureLimitOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Whole seconds until `client` may try again (at least 1), or 0 when it may try now. */
  retryAfterSeconds(client: string): number {
    const window = this.current(client);
    if (!window || window.failures < this.options.maxFailures) return 0;
    return Math.max(1, Math.ceil((window.startedAt + this.options.windowMs - this.now()) / 1000));
  }

  /** Records a failed attempt; returns whether it used up the client's allowance. */
  fail(client: string): boolean {
    const window = this.current(client);
    if (window) {
      window.failures += 1;
      return window.failures === this.options.maxFailures;
    }
    if (this.windows.size >= this.options.maxClients) this.evict();
    this.windows.set(client, { startedAt: this.now(), failures: 1 });
    return this.options.maxFailures === 1;
  }

  succeed(client: string): void {
    this.windows.delete(client);
  }

  private current(client: string): Window | undefined {
    const window = this.windows.get(client);
    if (window && this.now() - window.startedAt >= this.options.windowMs) {
      this.windows.delete(client);
      return undefined;
    }
    return window;
  }

  /** Drops expired windows, or, when none has expired, the oldest (insertion order is age order). */
  private evict(): void {
    const now = this.now();
    for (const [client, window] of this.windows) {
      if (now - window.startedAt >= this.options.windowMs) this.windows.delete(client);
    }
    if (this.windows.size >= this.options.maxClients) {
      const oldest = this.windows.keys().next();
      if (!oldest.done) this.windows.delete(oldest.value);
    }
  }
}

/**
 * The key a client's failures count under: its IPv4 address, or the /64 network of an IPv6 one
 * (one host usually holds a whole /64, and would otherwise get a fresh allowance per address).
 */
export function clientKey(ip: string): string {
  const address = ip.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
