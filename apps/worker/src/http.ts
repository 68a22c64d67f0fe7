import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface ProbeDeps {
  /** Resolves when Postgres and Redis answer; rejects with what does not. */
  ready(): Promise<void>;
  registry: Registry;
  /** False once shutdown began: readiness fails so nothing routes new work here. */
  accepting(): boolean;
}

/** `GET /healthz` (process up), `/readyz` (Postgres and Redis reachable), `/metrics` (Prometheus). */
export async function startProbeServer(
  deps: ProbeDeps,
  { port, host }: { port: number; host: string },
): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    const send = (status: number, body: string, type = 'application/json') => {
      response.writeHead(status, { 'content-type': type });
      response.end(body);
    };
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') return send(405, JSON.stringify({ error: { code: 'method_not_allowed' } }));
    if (path === '/healthz') return send(200, JSON.stringify({ status: 'ok' }));
    if (path === '/readyz') {
      if (!deps.accepting()) return send(503, JSON.stringify({ status: 'draining' }));
      deps
        .ready()
        .then(() => send(200, JSON.stringify({ status: 'ready' })))
        .catch((error: Error) => send(503, JSON.stringify({ status: 'unavailable', reason: error.message })));
      return;
    }
    if (path === '/metrics') {
      deps.registry
        .metrics()
        .then((text) => send(200, text, deps.registry.contentType))
        .catch((error: Error) =>
          send(500, JSON.stringify({ error: { code: 'metrics_failed', message: error.message } })),
        );
      return;
    }
    send(404, JSON.stringify({ error: { code: 'not_found', message: `no route ${path}` } }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return { server, port: (server.address() as AddressInfo).port };
}
