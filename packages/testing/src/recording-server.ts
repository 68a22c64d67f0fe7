import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the server saw: what was sent, and on which connection (0, 1, … in arrival order). */
export interface RecordedRequest {
  method: string;
  url: string;
  body: string;
  auth: string | undefined;
  socket: number;
}

export interface RecordingServer {
  /** Every request answered, in order. */
  readonly seen: RecordedRequest[];
  /**
   * While true, a request arriving on a connection that already served one is not answered: the
   * connection is destroyed, as by a server closing a kept-alive connection just as a request
   * goes out on it.
   */
  dropSecondOnSocket: boolean;
  /** Listens on a free port of 127.0.0.1; resolves to the base URL (`http://127.0.0.1:port`). */
  listen(): Promise<string>;
  close(): Promise<void>;
}

/**
 * A local HTTP server for HTTP client tests: records each request with the connection it came
 * on (to see keep-alive reuse) and hands it to `respond` once its body has arrived.
 */
export function recordingServer(
  respond: (request: RecordedRequest, res: http.ServerResponse) => void,
): RecordingServer {
  const sockets = new WeakMap<object, { id: number; served: number }>();
  let nextSocket = 0;
  const recorder: RecordingServer = {
    seen: [],
    dropSecondOnSocket: false,
    listen: () =>
      new Promise((resolve) =>
        server.listen(0, '127.0.0.1', () =>
          resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
        ),
      ),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    let socket = sockets.get(req.socket);
    if (!socket) sockets.set(req.socket, (socket = { id: nextSocket++, served: 0 }));
    const current = socket;
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (recorder.dropSecondOnSocket && current.served > 0) return req.socket.destroy();
      current.served++;
      const request = {
        method: req.method!,
        url: req.url!,
        body,
        auth: req.headers.authorization,
        socket: current.id,
      };
      recorder.seen.push(request);
      respond(request, res);
    });
  });
  return recorder;
}
