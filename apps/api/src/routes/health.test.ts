import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { describe, expect, it } from 'vitest';
import type { ApiResources } from '../resources';
import { useTestApi } from '../test-support/api';
import { healthRoutes } from './health';

const healthy = useTestApi();
const redisDown = useTestApi({
  redis: { ping: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6390')) },
  bodyLimit: 1024,
});

describe('probes', () => {
  it('/readyz is 200 when Postgres and Redis answer', async () => {
    const response = await healthy.request({ method: 'GET', url: '/readyz', key: null });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
  });

  it('/readyz stays 200 with Redis down, naming it in plain words (not its error): Redis does not gate', async () => {
    const response = await redisDown.request({ method: 'GET', url: '/readyz', key: null });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'unreachable' } });
    expect(response.body).not.toContain('ECONNREFUSED');
    expect((await redisDown.request({ method: 'GET', url: '/healthz', key: null })).statusCode).toBe(200);
  });

  it('/readyz is 503 naming Postgres when it does not answer, whatever Redis says', async () => {
    const refused = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5499'));
    for (const redisPing of [async () => 'PONG', refused]) {
      const app = Fastify();
      app.setValidatorCompiler(validatorCompiler);
      app.setSerializerCompiler(serializerCompiler);
      await app.register(
        healthRoutes({ db: { execute: refused }, redis: { ping: redisPing } } as unknown as ApiResources),
      );
      try {
        const response = await app.inject({ method: 'GET', url: '/readyz' });
        expect(response.statusCode).toBe(503);
        expect(response.json()).toEqual({
          status: 'unavailable',
          checks: { postgres: 'unreachable', redis: redisPing === refused ? 'unreachable' : 'ok' },
        });
        expect(response.body).not.toContain('ECONNREFUSED');
      } finally {
        await app.close();
      }
    }
  });
});

describe('request limits and unknown routes', () => {
  it('answers 413 payload_too_large above the body limit', async () => {
    const response = await redisDown.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { model: { id: 'gpt-4o' }, metadata: { padding: 'x'.repeat(4096) } },
    });
    expect(response.statusCode).toBe(413);
    expect(response.json().error.code).toBe('payload_too_large');
  });

  it.each([
    ['a bad percent-escape', '/v1/sessions/%E0%A4%A', 400],
    ['a malformed escape', '/v1/sessions/%zz/messages', 400],
    ['a path parameter longer than any id', `/v1/sessions/${'secret'.repeat(120)}`, 414],
  ])('answers %s in the error shape, without echoing the URL', async (_label, url, status) => {
    const response = await healthy.request({ method: 'GET', url });
    expect(response.statusCode).toBe(status);
    expect(response.json()).toEqual({ error: { code: 'validation_error', message: expect.any(String) } });
    expect(response.body).not.toContain('/v1/sessions');
    expect(response.body).not.toContain('secret');
  });

  it('answers 431 for headers too large, in the error shape (Node refuses them before Fastify)', async () => {
    const address = await healthy.app.listen({ port: 0, host: '127.0.0.1' });
    const response = await fetch(`${address}/healthz`, { headers: { 'x-padding': 'y'.repeat(64 * 1024) } });
    expect(response.status).toBe(431);
    expect(await response.json()).toEqual({
      error: { code: 'validation_error', message: 'the request headers are too large' },
    });
  });

  it('answers 404 not_found for an unknown route, in the error shape', async () => {
    const response = await healthy.request({ method: 'GET', url: '/v2/nothing' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: { code: 'not_found', message: 'no route GET /v2/nothing' } });
  });
});
