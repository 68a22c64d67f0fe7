import net from 'node:net';

export interface TestServices {
  databaseUrl: string;
  redisUrl: string;
  stop: () => Promise<void>;
}

const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

/** True when something accepts TCP connections at the URL's host and port. */
function reachable(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || defaultPort) });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
}

/**
 * Order: `DATABASE_URL` / `REDIS_URL` when set; the local services when they answer; otherwise
 * containers, which need a Docker engine. A missing service is an error, never a skipped test.
 */
export async function resolveTestServices(env = process.env): Promise<TestServices> {
  const stops: Array<() => Promise<unknown>> = [];
  let databaseUrl = env.DATABASE_URL ?? LOCAL_DATABASE_URL;
  let redisUrl = env.REDIS_URL ?? LOCAL_REDIS_URL;

  if (!env.DATABASE_URL && !(await reachable(databaseUrl, 5432))) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:16-alpine').start();
    databaseUrl = container.getConnectionUri();
    stops.push(() => container.stop());
  }
  if (!env.REDIS_URL && !(await reachable(redisUrl, 6379))) {
    const { RedisContainer } = await import('@testcontainers/redis');
    const container = await new RedisContainer('redis:7-alpine').start();
    redisUrl = container.getConnectionUrl();
    stops.push(() => container.stop());
  }
  return { databaseUrl, redisUrl, stop: async () => void (await Promise.all(stops.map((s) => s()))) };
}
