import { describe, expect, it } from 'vitest';
import { EnvError, parseWorkerEnv } from './env';

/** The least a worker needs besides the defaults: a summarizer endpoint. */
const base = { OPENAI_BASE_URL: 'http://127.0.0.1:4010/v1' };

describe('parseWorkerEnv', () => {
  it('sizes the Postgres pool apart from the concurrency, 10 by default', () => {
    const env = parseWorkerEnv({ ...base, WORKER_CONCURRENCY: '64' });
    expect(env.WORKER_CONCURRENCY).toBe(64);
    expect(env.DATABASE_POOL_SIZE).toBe(10);
    expect(parseWorkerEnv({ ...base, DATABASE_POOL_SIZE: '16' }).DATABASE_POOL_SIZE).toBe(16);
  });

  // 1 would deadlock the reconciler: it holds a connection while its work waits for another.
  it.each(['0', '1', '2.5', 'many', '1001'])('rejects DATABASE_POOL_SIZE=%s, naming only it', (value) => {
    const parse = () => parseWorkerEnv({ ...base, DATABASE_POOL_SIZE: value });
    expect(parse).toThrow(EnvError);
    expect(parse).toThrow(/DATABASE_POOL_SIZE/);
    expect(parse).not.toThrow(/OPENAI_API_KEY/);
  });
});
