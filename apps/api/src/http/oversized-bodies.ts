/**
 * A body over the limit still gets its 413, with the error body. Fastify answers as soon as it
 * knows (the declared length, or the bytes read so far) and closes the connection; a client that
 * is still uploading then sees its socket reset (EPIPE) instead of the answer, and retries a
 * network error: a too-large message became a loop of uploads. So the rest of the body is read
 * and thrown away first (bounded: past it the client is not one that reads answers), and a
 * client that asks first (`Expect: 100-continue`) is refused before it sends anything.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** How much of an oversized body is read and discarded, at most, before the 413 goes out. */
export const OVERSIZED_DRAIN_MAX_BYTES = 256 * 1024 * 1024;
/** And for how long. */
export const OVERSIZED_DRAIN_MAX_MS = 30_000;

/**
 * Reads what is left of `request`'s body and discards it, until it ends, errors, or passes
 * `maxBytes` or `maxMs` (then the connection is closed under it, as before).
 */
export function drainRequestBody(
  request: IncomingMessage,
  { maxBytes = OVERSIZED_DRAIN_MAX_BYTES, maxMs = OVERSIZED_DRAIN_MAX_MS } = {},
): Promise<void> {
  if (request.complete || request.readableEnded || request.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let drained = 0;
    const done = () => {
      clearTimeout(timer);
      request.off('data', count);
      request.off('end', done);
      request.off('error', done);
      request.off('close', done);
      resolve();
    };
    const count = (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > maxBytes) done();
    };
    const timer = setTimeout(done, maxMs);
    request.on('data', count);
    request.once('end', done);
    request.once('error', done);
    request.once('close', done);
    request.resume();
  });
}

/**
 * Answers `Expect: 100-continue` with the 413 at once when the declared body is over `bodyLimit`
 * (nothing has been sent yet, so the client reads it); otherwise lets the body come as Node does.
 */
export function refuseOversizedBeforeContinue(
  server: Server,
  bodyLimit: number,
  payload: (limit: number) => string,
): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    const declared = Number(request.headers['content-length']);
    if (declared > bodyLimit) {
      const text = payload(bodyLimit);
      response.writeHead(413, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
        connection: 'close',
      });
      response.end(text);
      return;
    }
    response.writeContinue();
    server.emit('request', request, response);
  });
}
