import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, ApiError } from './client';

/** Requests seen: method, path, body, the bearer, and which connection carried each. */
const seen: { method: string; url: string; body: string; auth: string | undefined; socket: number }[] = [];
let dropSecondOnSocket = false;
const sockets = new WeakMap<object, { id: number; served: number }>();
let nextSocket = 0;

const server = http.createServer((req, res) => {
  let socket = sockets.get(req.socket);
  if (!socket) sockets.set(req.socket, (socket = { id: nextSocket++, served: 0 }));
  const current = socket;
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    // As a server does that closes a kept-alive connection just as a request goes out on it.
    if (dropSecondOnSocket && current.served > 0) return req.socket.destroy();
    current.served++;
    seen.push({
      method: req.method!,
      url: req.url!,
      body,
      auth: req.headers.authorization,
      socket: current.id,
    });
    if (req.url === '/fail') return res.writeHead(409).end(JSON.stringify({ error: { code: 'conflict' } }));
    if (req.url === '/proxy') return res.writeHead(502).end('<html>bad gateway</html>');
    if (req.url === '/empty') return res.writeHead(204).end();
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ echo: body, ünïcode: '✓' }));
  });
});
let base = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

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
    dropSecondOnSocket = true;
    try {
      expect(await call('POST', '/second', { n: 2 })).toEqual({ echo: '{"n":2}', ünïcode: '✓' });
    } finally {
      dropSecondOnSocket = false;
    }
    expect(seen.map((s) => s.url)).toEqual(['/first', '/second']);
    expect(seen[0]!.socket).not.toBe(seen[1]!.socket);
  });

  it('rejects when nothing listens', async () => {
    await expect(apiClient('http://127.0.0.1:1', null)('GET', '/')).rejects.toThrow(/ECONNREFUSED/);
  });
});
