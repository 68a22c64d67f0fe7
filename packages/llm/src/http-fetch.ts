/**
 * The OpenAI SDK's transport (its `fetch` option) on Node's own HTTP client with keep-alive
 * connections. The global `fetch` (undici) cost about a millisecond more CPU per LLM call, a
 * tenth of the worker's CPU for a small compaction.
 *
 * It covers what the SDK sends, a string or byte body: anything else (a `Request`, a stream or
 * form body) goes to the global `fetch`, and so does a request answered with a redirect (sent
 * there again, which follows it as `fetch` does: the redirecting server sees the request twice).
 * Compressed answers are decoded; an SSE answer streams, any other is read whole before the
 * promise resolves. Nothing is sent twice on an error: a connection reset, even on a reused
 * connection, is the request's error (the SDK calls it a connection error, the job queue
 * retries), because a POST the server had already processed would otherwise be paid twice.
 * Errors are the socket's own (`ECONNRESET`, `ECONNREFUSED`, ...); an abort rejects, or errors
 * the streaming body, with the signal's reason: the SDK maps both as it maps `fetch`'s.
 */
import http from 'node:http';
import https from 'node:https';
import { pipeline, Readable } from 'node:stream';
import zlib from 'node:zlib';

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Statuses whose response has no body (`new Response` refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const EVENT_STREAM = /^text\/event-stream/i;

/**
 * Idle connections close after this long, before a server or proxy closes them under a request
 * (Node's agent also honours a shorter `Keep-Alive: timeout=` hint). Only idle ones: a request
 * in flight keeps its connection however long the model takes.
 */
const IDLE_SOCKET_MS = 4_000;

export function createHttpFetch(fallback: Fetch = globalThis.fetch): Fetch {
  const agents = {
    'http:': new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
    'https:': new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
  };
  return async (input, init = {}) => {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : null;
    const body = init.body;
    const plainBody =
      body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
    if (!url || !plainBody || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      return fallback(input, init);
    const answer = await request(url, init, body ?? undefined, agents[url.protocol as 'http:' | 'https:']);
    return answer === 'redirect' ? fallback(input, init) : answer;
  };
}

function request(
  url: URL,
  init: RequestInit,
  body: string | Uint8Array | undefined,
  agent: http.Agent,
): Promise<Response | 'redirect'> {
  const signal = init.signal ?? undefined;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    if (body !== undefined && headers['content-length'] === undefined)
      headers['content-length'] = String(
        typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength,
      );
    const fail = (error: unknown) => reject(signal?.aborted ? signal.reason : error);
    /** The answer's body once it is arriving: an abort errors it with the signal's reason. */
    let answerBody: Readable | null = null;
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request(url, { method: init.method ?? 'GET', headers, agent }, (res) => {
      try {
        const status = res.statusCode ?? 0;
        if (REDIRECT_STATUSES.has(status) && res.headers.location) {
          res.resume();
          return resolve('redirect');
        }
        // What `new Response` accepts; anything else is a broken server (a connection error).
        if (status < 200 || status > 599) throw new TypeError(`invalid HTTP status ${status}`);
        const responseHeaders = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          responseHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const decoded = decode(res, responseHeaders);
        answerBody = decoded;
        const responseInit = { status, statusText: res.statusMessage ?? '', headers: responseHeaders };
        if (NULL_BODY_STATUSES.has(status) || init.method?.toUpperCase() === 'HEAD') {
          decoded.resume();
          return resolve(new Response(null, responseInit));
        }
        if (EVENT_STREAM.test(responseHeaders.get('content-type') ?? '')) {
          return resolve(new Response(Readable.toWeb(decoded) as ReadableStream<Uint8Array>, responseInit));
        }
        const chunks: Buffer[] = [];
        decoded.on('data', (chunk: Buffer) => chunks.push(chunk));
        decoded.on('end', () => resolve(new Response(Buffer.concat(chunks), responseInit)));
        decoded.on('error', fail);
      } catch (error) {
        res.destroy();
        fail(error);
      }
    });
    const onAbort = () => {
      const reason: unknown = signal?.reason;
      const error =
        reason instanceof Error ? reason : new DOMException('The request was aborted', 'AbortError');
      answerBody?.destroy(error);
      req.destroy(error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => signal?.removeEventListener('abort', onAbort));
    req.on('error', fail);
    req.end(body);
  });
}

/** The body as sent, or decoded when the server compressed it (the header goes with it). */
function decode(res: http.IncomingMessage, headers: Headers): Readable {
  const encoding = (headers.get('content-encoding') ?? '').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate' // HTTP's deflate is the zlib format (RFC 9110)
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : null;
  if (!decoder) return res;
  headers.delete('content-encoding');
  headers.delete('content-length');
  // Destroying either end (an abort, a cancelled stream) closes the other, the socket with it.
  return pipeline(res, decoder, () => undefined);
}
