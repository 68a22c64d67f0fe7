/**
 * The SDK's transport on Node's HTTP client, against a local server: what `fetch` would answer,
 * for the cases the fault tests through the stub (client.test.ts) do not reach.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { recordingServer } from '@compactor/testing';
import { createHttpFetch, type Fetch } from './http-fetch';

const server = recordingServer(({ url, body }, res) => {
  const json = JSON.stringify({ echo: body, ünïcode: '✓' });
  switch (url) {
    case '/gzip':
      return res
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(zlib.gzipSync(json));
    case '/br':
      return res
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'br' })
        .end(zlib.brotliCompressSync(json));
    case '/moved':
      return res.writeHead(307, { location: '/target' }).end();
    case '/empty':
      return res.writeHead(204).end();
    case '/events':
      res.writeHead(200, { 'content-type': 'Text/Event-Stream; charset=utf-8' });
      res.write('data: one\n\n');
      return setTimeout(() => res.end('data: two\n\n'), 50);
    case '/status-600':
      return res.writeHead(600).end('odd');
    case '/endless-events':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return res.write('data: first\n\n');
    case '/slow':
      return setTimeout(() => res.writeHead(200).end(json), 10_000).unref();
    default:
      return res
        .writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'r1', 'set-cookie': 'a=1' })
        .end(json);
  }
});
const seen = server.seen;
let base = '';

beforeAll(async () => {
  base = await server.listen();
});
afterAll(() => server.close());

/** A fallback that must not be reached. */
const noFallback: Fetch = () => Promise.reject(new Error('fell back to fetch'));

describe('createHttpFetch', () => {
  it('sends the method, headers and body and answers status, headers and body, over one kept-alive connection', async () => {
    seen.length = 0;
    const fetch = createHttpFetch(noFallback);
    const first = await fetch(`${base}/a`, {
      method: 'POST',
      headers: new Headers({ 'content-type': 'application/json' }),
      body: '{"x":1}',
    });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-request-id')).toBe('r1');
    expect(await first.json()).toEqual({ echo: '{"x":1}', ünïcode: '✓' });
    const second = await fetch(new URL(`${base}/b`), {
      body: new TextEncoder().encode('bytes'),
      method: 'PUT',
    });
    expect(await second.json()).toEqual({ echo: 'bytes', ünïcode: '✓' });
    expect(seen.map((s) => [s.method, s.url])).toEqual([
      ['POST', '/a'],
      ['PUT', '/b'],
    ]);
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
  });

  it.each(['/gzip', '/br'])('decodes a compressed answer (%s)', async (path) => {
    const answer = await createHttpFetch(noFallback)(`${base}${path}`);
    expect(answer.headers.get('content-encoding')).toBeNull();
    expect(await answer.json()).toEqual({ echo: '', ünïcode: '✓' });
  });

  it('answers a body-less status without a body', async () => {
    const answer = await createHttpFetch(noFallback)(`${base}/empty`);
    expect(answer.status).toBe(204);
    expect(answer.body).toBeNull();
  });

  it('streams an SSE answer as it arrives', async () => {
    const answer = await createHttpFetch(noFallback)(`${base}/events`);
    const reader = answer.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('data: one\n\n');
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe('data: two\n\n');
  });

  it('hands a redirect, and what it cannot send itself, to fetch', async () => {
    const fallback = vi.fn<Fetch>((input, init) => globalThis.fetch(input, init));
    const fetch = createHttpFetch(fallback);
    const moved = await fetch(`${base}/moved`, { method: 'POST', body: 'again' });
    expect(moved.status).toBe(200);
    expect(await moved.json()).toEqual({ echo: 'again', ünïcode: '✓' });
    const stream = new ReadableStream({
      start: (controller) => controller.close(),
    });
    await fetch(`${base}/c`, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    expect(fallback.mock.calls.map(([input]) => String(input))).toEqual([`${base}/moved`, `${base}/c`]);
  });

  it('never sends a request twice: a reset on a kept-alive connection is the request error', async () => {
    seen.length = 0;
    const fetch = createHttpFetch(noFallback);
    await (await fetch(`${base}/first`)).text();
    server.dropSecondOnSocket = true;
    try {
      // The server read this POST before the connection went: sending it again could pay twice.
      await expect(fetch(`${base}/second`, { method: 'POST', body: 'n' })).rejects.toMatchObject({
        code: 'ECONNRESET',
      });
    } finally {
      server.dropSecondOnSocket = false;
    }
    expect(seen.map((s) => s.url)).toEqual(['/first']);
  });

  it('rejects an answer with a status fetch would not accept, as a connection error would', async () => {
    await expect(createHttpFetch(noFallback)(`${base}/status-600`)).rejects.toThrow(TypeError);
  });

  it('an abort while an SSE answer streams errors the stream with the reason', async () => {
    const controller = new AbortController();
    const answer = await createHttpFetch(noFallback)(`${base}/endless-events`, { signal: controller.signal });
    const reader = answer.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    const reason = new Error('stop streaming');
    controller.abort(reason);
    await expect(reader.read()).rejects.toBe(reason);
  });

  it('rejects with the abort reason, before sending and in flight', async () => {
    const fetch = createHttpFetch(noFallback);
    const before = seen.length;
    const reason = new Error('stop');
    await expect(fetch(`${base}/a`, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(seen.length).toBe(before);
    const controller = new AbortController();
    const pending = fetch(`${base}/slow`, { signal: controller.signal });
    await vi.waitFor(() => expect(seen.at(-1)?.url).toBe('/slow'));
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('rejects with the socket error when nothing listens', async () => {
    await expect(createHttpFetch(noFallback)('http://127.0.0.1:1/')).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });
});
