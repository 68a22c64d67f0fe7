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

  it('admits 4 jobs at a time to their database and CPU work by default, whatever the concurrency', () => {
    expect(parseWorkerEnv({ ...base, WORKER_CONCURRENCY: '64' }).WORKER_STEP_CONCURRENCY).toBe(4);
    expect(parseWorkerEnv({ ...base, WORKER_STEP_CONCURRENCY: '8' }).WORKER_STEP_CONCURRENCY).toBe(8);
  });

  it.each(['0', '-1', '1.5', 'few', '1025'])('rejects WORKER_STEP_CONCURRENCY=%s, naming it', (value) => {
    const parse = () => parseWorkerEnv({ ...base, WORKER_STEP_CONCURRENCY: value });
    expect(parse).toThrow(EnvError);
    expect(parse).toThrow(/WORKER_STEP_CONCURRENCY/);
  });

  it('refuses a queue prefix the API refuses (the fields both read are declared once, in @compactor/queue)', () => {
    // A space would break the queues' key patterns; the API and the worker must agree on the prefix.
    expect(() => parseWorkerEnv({ ...base, QUEUE_PREFIX: 'my prefix' })).toThrow(/QUEUE_PREFIX/);
    expect(parseWorkerEnv({ ...base, QUEUE_PREFIX: '{acme}' }).QUEUE_PREFIX).toBe('{acme}');
  });
});
