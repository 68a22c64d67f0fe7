import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';

/** One server or a Redis Cluster: the commands Compactor uses work on both. */
export type RedisClient = Redis | Cluster;

const CLUSTER_URL = /^(rediss?)-cluster:\/\/(?:([^@]*)@)?([^/?#@]+)\/?$/;

/** Seed nodes and credentials of a `redis-cluster://` URL, or null for any other URL. */
export function parseClusterUrl(url: string): {
  nodes: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
  tls: boolean;
} | null {
  const match = CLUSTER_URL.exec(url);
  if (!match) return null;
  const [, scheme, credentials, hosts] = match as unknown as [string, string, string | undefined, string];
  const nodes = hosts.split(',').map((node) => {
    const at = node.lastIndexOf(':');
    const port = Number(node.slice(at + 1));
    if (at <= 0 || !Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new Error(`invalid Redis Cluster node "${node}": expected host:port`);
    }
    return { host: node.slice(0, at), port };
  });
  const [username, password] = credentials === undefined ? [] : splitCredentials(credentials);
  return {
    nodes,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    tls: scheme === 'rediss',
  };
}

function splitCredentials(credentials: string): [string | undefined, string | undefined] {
  const colon = credentials.indexOf(':');
  const decode = (s: string) => (s === '' ? undefined : decodeURIComponent(s));
  return colon < 0
    ? [undefined, decode(credentials)]
    : [decode(credentials.slice(0, colon)), decode(credentials.slice(colon + 1))];
}

/**
 * A client for `url`. `redis://` / `rediss://` is one server; `redis-cluster://` (TLS:
 * `rediss-cluster://`) lists seed nodes of a Redis Cluster, comma-separated, with optional
 * credentials: `redis-cluster://[user:password@]host:port,host:port`. The queue prefix is
 * hash-tagged (`{compactor}`), so every key of a queue lives in one slot, as BullMQ needs there.
 */
export function createRedis(url: string, options: RedisOptions = {}): RedisClient {
  const cluster = parseClusterUrl(url);
  if (!cluster) return new Redis(url, options);
  const { lazyConnect, enableOfflineQueue, ...perNode } = options;
  return new Cluster(cluster.nodes, {
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    redisOptions: {
      ...perNode,
      ...(cluster.username ? { username: cluster.username } : {}),
      ...(cluster.password ? { password: cluster.password } : {}),
      ...(cluster.tls ? { tls: {} } : {}),
    },
  });
}

/**
 * How long a command on a plain (non-blocking) connection may wait for its answer: publishing an
 * event, a readiness PING, reading event history. A frozen Redis keeps the socket open and never
 * answers, and without a timeout the request that sent the command would hang with it; past this
 * the command fails and its caller's fallback runs (events are best effort, probes report it).
 * Never set on BullMQ's connections: their blocking commands wait on purpose.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 2_000;

/** `REDIS_URL` in an environment schema: a `redis(s)://` URL or a `redis(s)-cluster://` node list. */
export const redisUrlSchema = z.string().refine(
  (url) => {
    try {
      if (parseClusterUrl(url)) return true;
      return /^rediss?:$/.test(new URL(url).protocol);
    } catch {
      return false;
    }
  },
  { message: 'expected redis://host:port[/db], rediss://…, or redis-cluster://host:port,host:port' },
);
