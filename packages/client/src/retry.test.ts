/**
 * Retries against a tiny local HTTP server that refuses first (429/503 with `Retry-After`) and
 * answers later, plus the pure backoff rules.
 */
import { describe, expect, it } from 'vitest';
import { sessionExample } from './test-support/session-example.js';
import { useScriptedServer } from './test-support/scripted-server.js';
import { CompactorClient } from './client.js';
import { CompactorApiError } from './errors.js';
import { mayRetry, parseRetryAfter, retryDelayMs, retryPolicy } from './retry.js';

const server = useScriptedServer();

const busy = { error: { code: 'too_many_requests', message: 'too many writes waiting for this session' } };
const client = (retry = {}) =>
  new CompactorClient({
    baseUrl: server.baseUrl,
    apiKey: 'k',
    retry: { random: () => 0.5, ...retry },
    validateResponses: true,
  });

describe('retrying refused requests', () => {
  it('waits for Retry-After after a 429, then returns the 200', async () => {
    server.script = [
      { status: 429, headers: { 'retry-after': '1' }, body: busy },
      { status: 200, body: sessionExample },
    ];
    const session = await client().getSession('support-42');
    expect(session.id).toBe('support-42');
    expect(server.arrivals).toHaveLength(2);
    expect(server.arrivals[1]! - server.arrivals[0]!).toBeGreaterThanOrEqual(950);
  });

  it('backs off exponentially on 503s without Retry-After, then gives up with the error body', async () => {
    server.script = [
      { status: 503, body: { error: { code: 'service_unavailable', message: 'Redis is down' } } },
    ];
    const error = await client({ maxRetries: 3, baseDelayMs: 40 })
      .getSession('x')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompactorApiError);
    expect(error).toMatchObject({ status: 503, code: 'service_unavailable', message: 'Redis is down' });
    expect(server.arrivals).toHaveLength(4);
    const gaps = server.arrivals.slice(1).map((at, i) => at - server.arrivals[i]!);
    // random 0.5 → 75 % of 40, 80, 160 ms.
    expect(gaps[0]).toBeGreaterThanOrEqual(25);
    expect(gaps[2]).toBeGreaterThanOrEqual(110);
    expect(gaps[2]!).toBeGreaterThan(gaps[0]!);
  });

  it('does not wait for a Retry-After beyond the limit, nor retry other errors', async () => {
    server.script = [{ status: 429, headers: { 'retry-after': '3600' }, body: busy }];
    await expect(client().getSession('x')).rejects.toMatchObject({ status: 429, code: 'too_many_requests' });
    expect(server.arrivals).toHaveLength(1);

    server.script = [{ status: 409, body: { error: { code: 'conflict', message: 'other body' } } }];
    server.arrivals.length = 0;
    await expect(client().getSession('x')).rejects.toMatchObject({ status: 409, code: 'conflict' });
    expect(server.arrivals).toHaveLength(1);
  });

  it('keeps a body that is not the API shape as the message', async () => {
    server.script = [{ status: 502, body: 'Bad gateway (proxy)' }];
    await expect(client().getSession('x')).rejects.toMatchObject({
      status: 502,
      code: 'http_error',
      message: '"Bad gateway (proxy)"',
    });
  });
});

describe('retrying writes', () => {
  const proxyReset = { status: 503, body: 'upstream connect error or disconnect/reset before headers' };

  it('retries a POST the API itself refused (its error body: nothing was written)', async () => {
    server.script = [
      { status: 429, headers: { 'retry-after': '0' }, body: busy },
      { status: 201, body: { id: 'prn_1', status: 'queued' } },
    ];
    await client()
      .prune('support-42')
      .catch(() => undefined);
    expect(server.arrivals).toHaveLength(2);
  });

  it("does not retry a POST after a proxy's 503: the API may already have written it", async () => {
    server.script = [proxyReset];
    await expect(client().prune('support-42')).rejects.toMatchObject({ status: 503, code: 'http_error' });
    expect(server.arrivals).toHaveLength(1);
  });

  it("retries a compaction request with an Idempotency-Key after a proxy's 502", async () => {
    server.script = [
      { status: 502, body: 'bad gateway' },
      { status: 503, body: 'bad gateway' },
      { status: 400, body: {} },
    ];
    await client({ baseDelayMs: 1 })
      .requestCompaction('support-42', { idempotencyKey: 'k-1' })
      .catch(() => undefined);
    expect(server.arrivals).toHaveLength(3);
  });

  it.each([
    ['GET', 502, 'http_error', false, true],
    ['GET', 504, 'http_error', false, true],
    ['GET', 500, 'internal_error', false, false],
    ['POST', 503, 'service_unavailable', false, true],
    ['POST', 429, 'too_many_requests', false, true],
    ['POST', 503, 'http_error', false, false],
    ['POST', 502, 'http_error', false, false],
    ['POST', 502, 'http_error', true, true],
    ['PATCH', 409, 'conflict', true, false],
  ])('%s answered %i %s (idempotency key: %s): retry %s', (method, status, code, key, expected) => {
    expect(mayRetry(method, { status, code }, key)).toBe(expected);
  });
});

describe('the backoff rules', () => {
  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter('0.25')).toBe(250);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:05 GMT', Date.UTC(2015, 9, 21, 7, 28, 0))).toBe(5000);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
  });

  it('doubles up to the cap, jitters, honours Retry-After and stops after maxRetries', () => {
    const policy = retryPolicy({ baseDelayMs: 100, maxDelayMs: 1000, maxRetries: 6, random: () => 1 });
    expect([0, 1, 2, 3, 4, 5].map((retry) => retryDelayMs(policy, retry, null))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(retryDelayMs({ ...policy, random: () => 0 }, 2, null)).toBe(200);
    expect(retryDelayMs(policy, 0, 5000)).toBe(5000);
    expect(retryDelayMs(policy, 6, null)).toBeNull();
    expect(retryDelayMs(policy, 0, 120_000)).toBeNull();
  });
});
