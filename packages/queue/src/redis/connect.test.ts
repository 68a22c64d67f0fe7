import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRedis, parseClusterUrl, redisUrlSchema } from './connect';

describe('REDIS_URL', () => {
  it.each([
    ['redis://127.0.0.1:6379', true],
    ['rediss://user:secret@redis.internal:6380/2', true],
    ['redis-cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000', true],
    ['rediss-cluster://default:p%40ss@a.example:7000,b.example:7001', true],
    ['redis-cluster://10.0.0.1', false],
    ['redis-cluster://10.0.0.1:0', false],
    ['redis-cluster://10.0.0.1:7000,', false],
    ['http://127.0.0.1:6379', false],
    ['127.0.0.1:6379', false],
    ['', false],
  ])('%s is accepted: %s', (url, accepted) => {
    expect(redisUrlSchema.safeParse(url).success).toBe(accepted);
  });

  it('reads seed nodes, credentials and TLS from a cluster URL', () => {
    expect(parseClusterUrl('rediss-cluster://default:p%40ss@a.example:7000,b.example:7001')).toEqual({
      nodes: [
        { host: 'a.example', port: 7000 },
        { host: 'b.example', port: 7001 },
      ],
      username: 'default',
      password: 'p@ss',
      tls: true,
    });
    expect(parseClusterUrl('redis-cluster://:only-password@h:1')).toEqual({
      nodes: [{ host: 'h', port: 1 }],
      password: 'only-password',
      tls: false,
    });
    expect(parseClusterUrl('redis://127.0.0.1:6379')).toBeNull();
  });

  it('makes a Cluster client for a cluster URL and a plain one otherwise, per-node options passed down', () => {
    const cluster = createRedis('redis-cluster://127.0.0.1:7000,127.0.0.1:7001', {
      lazyConnect: true,
      maxRetriesPerRequest: null,
    });
    const single = createRedis('redis://127.0.0.1:6379', { lazyConnect: true });
    try {
      expect(cluster).toBeInstanceOf(Cluster);
      expect((cluster as Cluster).options.redisOptions).toMatchObject({ maxRetriesPerRequest: null });
      expect(single).toBeInstanceOf(Redis);
    } finally {
      cluster.disconnect();
      single.disconnect();
    }
  });
});
