/**
 * An idle bound on an upstream answer's body. The SDKs' timeouts end when the headers arrive, so
 * a provider that then stops sending (a whole body half written, a stream that goes quiet) would
 * hold the request, and the client, for as long as the socket lives.
 */
import type { UpstreamFailure } from './errors';

/**
 * `response` with a body that fails with `failure()` (and calls `abort`, which ends the upstream
 * call) when `idleMs` pass without a byte. The clock runs only while a read waits on the
 * provider: a reader that is slow to ask (a client slow to take the stream) is never the
 * provider's fault. 0 leaves the body unbounded.
 */
export function withIdleBound(
  response: Response,
  idleMs: number,
  abort: () => void,
  failure: () => UpstreamFailure,
): Response {
  const upstream = response.body;
  if (upstream === null || idleMs <= 0) return response;
  const reader = upstream.getReader();
  let idled = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const timer = setTimeout(() => {
        idled = true;
        controller.error(failure());
        abort();
      }, idleMs);
      try {
        const next = await reader.read();
        if (idled) return;
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        // After the bound fired, the read fails with the abort it caused: the failure stands.
        if (!idled) controller.error(error);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
