import { describe, expect, it } from 'vitest';
import { startApiProcess, useReliabilityRig, waitForTerminal } from './harness';

/**
 * Secrets never reach a log (issue 10): the API and a worker run with every secret they take —
 * a tenant API key, the operator token, the LLM provider key, a database password — at LOG_LEVEL
 * debug, through requests that fail authentication, a compaction whose LLM calls fail and
 * retry, and a shutdown. None of the secrets appears in anything either process wrote.
 */
const SECRETS = {
  apiKey: 'sk-tenant-key-4b7f2c9d1e',
  adminToken: 'ops-token-9f8e7d6c5b4a',
  openaiKey: 'sk-provider-key-1a2b3c4d5e',
  dbPassword: 'db-password-0f9e8d7c',
};
const rig = useReliabilityRig({
  label: 'rel-secrets',
  workerEnv: { OPENAI_API_KEY: SECRETS.openaiKey, LOG_LEVEL: 'debug' },
});

/** The test database's URL with a password in it (trust auth ignores it; a log line would not). */
const withPassword = (url: string) =>
  url.replace('postgres://postgres@', `postgres://postgres:${SECRETS.dbPassword}@`);

describe('logs', () => {
  it('carry no API key, operator token, provider key or database password', async () => {
    const api = await startApiProcess({
      DATABASE_URL: withPassword(rig.database.url),
      REDIS_URL: rig.redisUrl,
      QUEUE_PREFIX: rig.prefix,
      API_KEYS: `tenant-s:${SECRETS.apiKey}`,
      ADMIN_TOKEN: SECRETS.adminToken,
      OPENAI_API_KEY: SECRETS.openaiKey,
      LOG_LEVEL: 'debug',
    });
    try {
      const call = (path: string, init: RequestInit = {}, key: string | null = SECRETS.apiKey) =>
        fetch(`${api.url}${path}`, {
          ...init,
          headers: {
            'content-type': 'application/json',
            ...(key ? { authorization: `Bearer ${key}` } : {}),
          },
        });
      // Refused: a wrong key that contains the real one, and the real key on the dashboard.
      expect((await call('/v1/sessions/x', {}, `${SECRETS.apiKey}-wrong`)).status).toBe(401);
      expect((await call('/admin/queues')).status).toBe(401);
      expect((await call('/admin/queues', {}, SECRETS.adminToken)).status).toBe(200);
      // A session, a turn and a compaction whose first LLM calls fail (the worker retries).
      rig.stub.setFaults({ status: 500, times: 2 });
      expect(
        (
          await call('/v1/sessions', {
            method: 'POST',
            body: JSON.stringify({ id: 'ses-secrets', model: { id: 'gpt-4o', provider: 'openai' } }),
          })
        ).status,
      ).toBe(201);
      const messages = Array.from({ length: 6 }, (_, i) => ({
        id: `m${i}`,
        role: i % 2 === 0 ? 'user' : 'assistant',
        parts: [{ type: 'text', text: `turn ${i}: ${'some words about the code '.repeat(40)}` }],
      }));
      expect(
        (
          await call('/v1/sessions/ses-secrets/messages', {
            method: 'POST',
            body: JSON.stringify({ messages }),
          })
        ).status,
      ).toBe(201);
      const requested = await call('/v1/sessions/ses-secrets/compactions', {
        method: 'POST',
        body: JSON.stringify({ keepRecentTokens: 100 }),
      });
      expect(requested.status).toBe(202);
      const compaction = (await requested.json()) as { id: string };
      await rig.fleet.spawn({ DATABASE_URL: withPassword(rig.database.url) });
      const [row] = await waitForTerminal(rig.database.db, [compaction.id], 60_000);
      expect(row!.status).toBe('completed');
      expect(rig.stub.requests.filter((r) => r.status === 500)).toHaveLength(2);
    } finally {
      api.child.kill('SIGTERM');
      await new Promise((resolve) => api.child.once('exit', resolve));
      await rig.fleet.stopAll();
    }
    const logs = [api.output(), ...rig.fleet.all.map((w) => w.log.lines.map((l) => l.line).join('\n'))].join(
      '\n',
    );
    expect(logs.length).toBeGreaterThan(1_000); // it did log (debug), so the check means something
    for (const [name, secret] of Object.entries(SECRETS)) expect(logs.includes(secret), name).toBe(false);
  });
});
