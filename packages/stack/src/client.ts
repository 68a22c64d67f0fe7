/** The API over HTTP with a bearer key: JSON in, JSON out, a non-2xx status throws with its body. */
import http from 'node:http';
import https from 'node:https';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One call to the API: `call('GET', '/v1/sessions/x')`. */
export type ApiCall = (method: string, path: string, body?: unknown) => Promise<Json>;

/** A non-2xx answer: the status and the API's error code, for callers that handle some of them. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
  ) {
    super(message);
  }
}

/**
 * Calls the API at `base` (no trailing slash) with `key` (`null`: an open API), over keep-alive
 * connections of Node's own HTTP client: `fetch` cost the replay 1.6–1.8 ms of CPU a request,
 * this about 0.7 ms (the replay sends one request per message, on the same two CPUs as the
 * stack it replays through; docs/benchmarks/history.md, Replay overhead).
 */
export function apiClient(base: string, key: string | null): ApiCall {
  const transport = base.startsWith('https:') ? https : http;
  // Idle connections close after 4 s, before a proxy in front of a remote API would close them.
  const agent = new transport.Agent({ keepAlive: true, timeout: 4_000 });
  return async (method, path, body) => {
    const payload = body !== undefined ? JSON.stringify(body) : undefined;
    const send = () => request(transport, agent, `${base}${path}`, method, key, payload);
    let response: { status: number; text: string };
    try {
      response = await send();
    } catch (error) {
      // The server closed an idle connection as this request went out on it: it never read the
      // request, so sending it again on a new connection is safe (Node's documented remedy).
      if (!(error instanceof ReusedSocketReset)) throw error;
      response = await send();
    }
    const { status, text } = response;
    if (status < 200 || status > 299) {
      let code: string | null = null;
      try {
        code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
      } catch {
        // Not the API's error shape (a proxy's page): the status says enough.
      }
      throw new ApiError(`${method} ${path} → ${status}: ${text.slice(0, 500)}`, status, code);
    }
    return (text === '' ? {} : JSON.parse(text)) as Json;
  };
}

/** A request that failed because the server had closed the kept-alive connection it was sent on. */
class ReusedSocketReset extends Error {}

function request(
  transport: typeof http | typeof https,
  agent: http.Agent,
  url: string,
  method: string,
  key: string | null,
  payload: string | undefined,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        method,
        agent,
        headers: {
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) =>
      reject(req.reusedSocket && error.code === 'ECONNRESET' ? new ReusedSocketReset(error.message) : error),
    );
    req.end(payload);
  });
}
