/**
 * Behind a reverse proxy every caller reaches the API from the proxy's address: with the proxy
 * trusted (`TRUST_PROXY`), the dashboard's wrong-token lockout counts the client that
 * `X-Forwarded-For` names, so one guesser no longer locks the operator out; a peer that is not
 * the proxy cannot name itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '@compactor/db/testing';
import { buildDashboardServer, type DashboardServer } from '../test-support/dashboard-server';
import { ADMIN_FAILURE_LIMIT } from './queue-dashboard';

const database = useTestDatabase();
const ADMIN_TOKEN = 'ops-token-0123456789abcdef';
const PROXY = '10.0.0.7';
let behindProxy: DashboardServer;
let direct: DashboardServer;

beforeAll(async () => {
  behindProxy = await buildDashboardServer(database, ADMIN_TOKEN, { trustProxy: `${PROXY},127.0.0.1` });
  direct = await buildDashboardServer(database, ADMIN_TOKEN);
});

afterAll(async () => {
  await behindProxy?.close();
  await direct?.close();
});

/** A dashboard request arriving from `peer`, forwarded for `client` when given. */
function dashboard(server: DashboardServer, peer: string, token: string, client?: string) {
  return server.app.inject({
    method: 'GET',
    url: '/admin/queues/api/queues',
    remoteAddress: peer,
    headers: {
      authorization: `Bearer ${token}`,
      ...(client === undefined ? {} : { 'x-forwarded-for': client }),
    },
  });
}

async function guessUntilLocked(server: DashboardServer, peer: string, client?: string): Promise<void> {
  for (let i = 0; i < ADMIN_FAILURE_LIMIT.maxFailures; i++)
    expect((await dashboard(server, peer, `guess-${i}`, client)).statusCode).toBe(401);
  expect((await dashboard(server, peer, ADMIN_TOKEN, client)).statusCode).toBe(429);
}

describe('the dashboard lockout behind a trusted proxy', () => {
  it('locks out the guesser X-Forwarded-For names, not the operator behind the same proxy', async () => {
    await guessUntilLocked(behindProxy, PROXY, '198.51.100.9');
    expect((await dashboard(behindProxy, PROXY, ADMIN_TOKEN, '198.51.100.10')).statusCode).toBe(200);
    // A chain of proxies: the nearest address that is not a trusted proxy is the client.
    expect((await dashboard(behindProxy, PROXY, ADMIN_TOKEN, '198.51.100.9, 127.0.0.1')).statusCode).toBe(
      429,
    );
  });

  it('ignores the header from a peer that is not the proxy, so a guesser cannot rename itself', async () => {
    const peer = '203.0.113.5';
    for (let i = 0; i < ADMIN_FAILURE_LIMIT.maxFailures; i++)
      expect((await dashboard(behindProxy, peer, `guess-${i}`, `192.0.2.${i}`)).statusCode).toBe(401);
    expect((await dashboard(behindProxy, peer, ADMIN_TOKEN, '192.0.2.200')).statusCode).toBe(429);
  });

  it('without TRUST_PROXY counts the peer, header or not: everyone behind one proxy shares it', async () => {
    await guessUntilLocked(direct, PROXY, '198.51.100.9');
    expect((await dashboard(direct, PROXY, ADMIN_TOKEN, '198.51.100.10')).statusCode).toBe(429);
  });
});
