// Container health probe without curl or wget in the image:
//   node infra/docker/healthcheck.mjs [path] [port]
// GETs http://127.0.0.1:<port><path> (port: the argument, else $PORT, else 3000; path: /healthz)
// and exits 0 on a 2xx, 1 otherwise (including no answer within 3 s). The API, the worker
// (health port) and the LLM stub all serve /healthz; /readyz also checks Postgres (the API) or
// Postgres and Redis (the worker).
const [path = '/healthz', port = process.env.PORT || '3000'] = process.argv.slice(2);
try {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(3000) });
  process.exit(response.ok ? 0 : 1);
} catch {
  process.exit(1);
}
