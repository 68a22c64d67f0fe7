import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach } from 'vitest';

/** One answer of a {@link useScriptedServer}. */
export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** What the server received: when each request arrived (ms since the epoch) and its body. */
export interface ScriptedServer {
  readonly baseUrl: string;
  /** The answers to give next, in order; the last one repeats. Set it in each test. */
  script: ScriptedAnswer[];
  readonly arrivals: number[];
  /** Each request's body parsed as JSON (null when it had none). */
  readonly bodies: unknown[];
}

/**
 * A local HTTP server for the file, answering by a script and recording what came (emptied
 * before each test): the client's retries and bodies, seen from the other side of the wire.
 */
export function useScriptedServer(): ScriptedServer {
  let server: Server;
  const state = {
    baseUrl: '',
    script: [] as ScriptedAnswer[],
    arrivals: [] as number[],
    bodies: [] as unknown[],
  };
  beforeAll(async () => {
    server = createServer((request, response) => {
      state.arrivals.push(Date.now());
      let text = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (text += chunk));
      request.on('end', () => {
        state.bodies.push(text === '' ? null : JSON.parse(text));
        const next = (state.script.length > 1 ? state.script.shift() : state.script[0])!;
        response.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
        response.end(JSON.stringify(next.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    state.arrivals.length = 0;
    state.bodies.length = 0;
  });
  return state;
}
