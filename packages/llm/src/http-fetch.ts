/**
 * The OpenAI SDK's transport (its `fetch` option) on Node's own HTTP client with keep-alive
 * connections. The global `fetch` (undici) cost about a millisecond more CPU per LLM call, a
 * tenth of the worker's CPU for a small compaction (docs/BENCHMARKS.md, the workflow section).
 *
 * It covers what the SDK sends, a string or byte body: anything else (a `Request`, a stream or
 * form body) goes to the global `fetch`, and so does a request answered with a redirect (sent
 * again there, which follows it as `fetch` does). Compressed answers are decoded; an SSE answer
 * streams, any other is read whole before the promise resolves. Errors are the socket's own
 * (`ECONNRESET`, `ECONNREFUSED`, ...), an abort rejects with the signal's reason: the SDK maps
 * both as it maps `fetch`'s.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Statuses whose response has no body (`new Response` refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Idle connections close after this long, before a server or proxy closes them under a request. */
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
    const send = () => request(url, init, body ?? undefined, agents[url.protocol as 'http:' | 'https:']);
    let answer: Answer;
    try {
      answer = await send();
    } catch (error) {
      // The server closed an idle kept-alive connection as the request went out on it: it never
      // read the request, so sending it again on a new connection is safe (Node's documented remedy).
      if (!(error instanceof ReusedSocketReset)) throw error;
      answer = await send();
    }
    if (answer === 'redirect') return fallback(input, init);
    return answer;
  };
}

type Answer = Response | 'redirect';

/** A request that failed because the server had closed the kept-alive connection it was sent on. */
class ReusedSocketReset extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause });
  }
}

function request(
  url: URL,
  init: RequestInit,
  body: string | Uint8Array | undefined,
  agent: http.Agent,
): Promise<Answer> {
  const signal = init.signal ?? undefined;
  return new Promise<Answer>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    if (body !== undefined && headers['content-length'] === undefined)
      headers['content-length'] = String(
        typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength,
      );
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request(url, { method: init.method ?? 'GET', headers, agent }, (res) => {
      const status = res.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status) && res.headers.location) {
        res.resume();
        return resolve('redirect');
      }
      const responseHeaders = new Headers();
      for (let i = 0; i < res.rawHeaders.length; i += 2)
        responseHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      const decoded = decode(res, responseHeaders);
      const responseInit = { status, statusText: res.statusMessage ?? '', headers: responseHeaders };
      const failed = (error: Error) => reject(signal?.aborted ? signal.reason : error);
      if (NULL_BODY_STATUSES.has(status) || init.method?.toUpperCase() === 'HEAD') {
        decoded.resume();
        return resolve(new Response(null, responseInit));
      }
      if ((responseHeaders.get('content-type') ?? '').startsWith('text/event-stream')) {
        return resolve(new Response(Readable.toWeb(decoded) as ReadableStream<Uint8Array>, responseInit));
      }
      const chunks: Buffer[] = [];
      decoded.on('data', (chunk: Buffer) => chunks.push(chunk));
      decoded.on('end', () => resolve(new Response(Buffer.concat(chunks), responseInit)));
      decoded.on('error', failed);
    });
    const onAbort = () => req.destroy(signal?.reason instanceof Error ? signal.reason : undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => signal?.removeEventListener('abort', onAbort));
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (signal?.aborted) return reject(signal.reason);
      reject(req.reusedSocket && error.code === 'ECONNRESET' ? new ReusedSocketReset(error) : error);
    });
    req.end(body);
  });
}

/** The body as sent, or decoded when the server compressed it (the header goes with it). */
function decode(res: http.IncomingMessage, headers: Headers): Readable {
  const encoding = (headers.get('content-encoding') ?? '').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : null;
  if (!decoder) return res;
  headers.delete('content-encoding');
  headers.delete('content-length');
  res.on('error', (error) => decoder.destroy(error));
  return res.pipe(decoder);
}
