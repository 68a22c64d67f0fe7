import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real server (the test Postgres), for outage tests that must not
 * touch the shared server itself: `freeze()` stops forwarding in both directions, as a server
 * that stopped answering would (SIGSTOP, a cut network: the client's socket stays open and its
 * writes are buffered); `stop()` resets every connection and refuses new ones, as a stopped
 * server; `resume()` undoes either.
 */
export interface TcpProxy {
  readonly port: number;
  freeze(): void;
  stop(): Promise<void>;
  resume(): Promise<void>;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let frozen = false;
  let server: Server;
  let port = 0;

  const setFrozen = (pair: Pair, value: boolean) => {
    for (const socket of [pair.client, pair.upstream]) {
      if (value) socket.pause();
      else socket.resume();
    }
  };
  const onConnection = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    // Data only moves while the pair is not frozen: a paused socket reads nothing.
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
    if (frozen) setFrozen(pair, true);
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer(onConnection);
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  const closeServer = () =>
    new Promise<void>((resolve) => {
      for (const pair of pairs) {
        pair.client.resetAndDestroy();
        pair.upstream.destroy();
      }
      pairs.clear();
      server.close(() => resolve());
    });

  await listen();
  let listening = true;
  return {
    get port() {
      return port;
    },
    freeze() {
      frozen = true;
      for (const pair of pairs) setFrozen(pair, true);
    },
    async stop() {
      if (!listening) return;
      listening = false;
      await closeServer();
    },
    async resume() {
      frozen = false;
      for (const pair of pairs) setFrozen(pair, false);
      if (!listening) {
        await listen();
        listening = true;
      }
    },
    async close() {
      if (listening) await closeServer();
      listening = false;
    },
  };
}
