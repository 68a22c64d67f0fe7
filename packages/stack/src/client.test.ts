import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingServer } from '@compactor/testing';
import { apiClient, ApiError } from './client';

/** Requests seen: method, path, body, the bearer, and which connection carried each. */
const server = recordingServer(({ url, body }, res) => {
  if (url === '/fail') return res.writeHead(409).end(JSON.stringify({ error: { code: 'conflict' } }));
  if (url === '/proxy') return res.writeHead(502).end('<html>bad gateway</html>');
  if (url === '/empty') return res.writeHead(204).end();
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ echo: body, ünïcode: '✓' }));
});
const seen = server.seen;
let base = '';

beforeAll(async () => {
  base = await server.listen();
});
afterAll(() => server.close());

describe('apiClient', () => {
  it('sends JSON with the bearer key and parses the answer, over one kept-alive connection', async () => {
    seen.length = 0;
    const call = apiClient(base, 'secret');
    expect(await call('POST', '/a', { x: 1 })).toEqual({ echo: '{"x":1}', ünïcode: '✓' });
    expect(await call('GET', '/b')).toEqual({ echo: '', ünïcode: '✓' });
    expect(await call('GET', '/empty')).toEqual({});
    expect(seen.map((s) => [s.method, s.url, s.auth])).toEqual([
      ['POST', '/a', 'Bearer secret'],
      ['GET', '/b', 'Bearer secret'],
      ['GET', '/empty', 'Bearer secret'],
    ]);
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
  });

  it('throws ApiError with the status and the API error code, or no code for a proxy page', async () => {
    const call = apiClient(base, null);
    const conflict = await call('POST', '/fail', {}).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ApiError);
    expect(conflict).toMatchObject({ status: 409, code: 'conflict' });
    expect(await call('GET', '/proxy').catch((e: unknown) => e)).toMatchObject({ status: 502, code: null });
  });

  it('sends a request again on a new connection when the kept-alive one was closed under it', async () => {
    seen.length = 0;
    const call = apiClient(base, null);
    await call('GET', '/first');
    server.dropSecondOnSocket = true;
    try {
      expect(await call('POST', '/second', { n: 2 })).toEqual({ echo: '{"n":2}', ünïcode: '✓' });
    } finally {
      server.dropSecondOnSocket = false;
    }
    expect(seen.map((s) => s.url)).toEqual(['/first', '/second']);
    expect(seen[0]!.socket).not.toBe(seen[1]!.socket);
  });

  it('rejects when nothing listens', async () => {
    await expect(apiClient('http://127.0.0.1:1', null)('GET', '/')).rejects.toThrow(/ECONNREFUSED/);
  });
});
