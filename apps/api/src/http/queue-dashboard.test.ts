import { connect } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '@compactor/db/testing';
import { TENANT_A_KEY, type TestReplica } from '../test-support/api';
import { buildDashboardServer, type DashboardServer } from '../test-support/dashboard-server';
import { ApiError } from './errors';
import { ADMIN_FAILURE_LIMIT, registerQueueDashboard, withoutExternalResources } from './queue-dashboard';

const database = useTestDatabase();
const ADMIN_TOKEN = 'ops-token-0123456789abcdef';
let server: DashboardServer;
let app: FastifyInstance;
let replica: TestReplica;

beforeAll(async () => {
  server = await buildDashboardServer(database, ADMIN_TOKEN);
  ({ app, replica } = server);
});

afterAll(async () => {
  await server.close();
});

const basic = (password: string) => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;

/** `app.inject` from a given client address (each test its own, so their failures do not add up). */
const fromAddress = (remoteAddress: string, authorization?: string, url = '/admin/queues/api/queues') =>
  app.inject({ method: 'GET', url, remoteAddress, ...(authorization ? { headers: { authorization } } : {}) });

/**
 * One request over a real socket with the path exactly as written: `inject` parses URLs with
 * WHATWG rules, which resolve `..` and `%2e%2e` before the server sees them; HTTP clients may not.
 */
function rawGet(
  port: number,
  path: string,
  authorization?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      const auth = authorization ? `Authorization: ${authorization}\r\n` : '';
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${auth}\r\n`);
    });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), body });
    });
    socket.on('error', reject);
  });
}

describe('queue dashboard (/admin/queues)', () => {
  it('asks a browser for the operator token and refuses tenant keys and wrong tokens', async () => {
    for (const authorization of [
      undefined,
      `Bearer ${TENANT_A_KEY}`,
      basic('wrong'),
      basic(`${ADMIN_TOKEN}x`),
    ]) {
      const response = await app.inject({
        method: 'GET',
        url: '/admin/queues',
        ...(authorization ? { headers: { authorization } } : {}),
      });
      expect(response.statusCode, authorization).toBe(401);
      expect(response.headers['www-authenticate']).toContain('Basic');
      expect(response.json()).toMatchObject({ error: { code: 'unauthorized' } });
    }
  });

  it('serves the board and its API on the job queues with the operator token', async () => {
    await replica.queues.enqueue('compact', 'cmp_dashboard_1', { compactionId: 'cmp_dashboard_1' });
    const page = await app.inject({
      method: 'GET',
      url: '/admin/queues',
      headers: { authorization: basic(ADMIN_TOKEN) },
    });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const queues = await app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(queues.statusCode).toBe(200);
    const names = (queues.json() as { queues: Array<{ name: string; counts: Record<string, number> }> })
      .queues;
    expect(names.map((q) => q.name).sort()).toEqual(['compact', 'prepare', 'prune']);
    expect(names.find((q) => q.name === 'compact')!.counts.waiting).toBe(1);
  });

  it('serves a page that loads nothing from outside the API: no web fonts, scripts, styles or images', async () => {
    const own = 'http://dashboard.test:8080';
    const get = (url: string) =>
      app.inject({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, host: new URL(own).host },
      });
    const page = await get('/admin/queues');
    expect(page.statusCode).toBe(200);
    const base = new URL(/<base\s+href="([^"]+)"/.exec(page.body)?.[1] ?? '/admin/queues/', own);
    const resources = resourceUrls(page.body).map((ref) => new URL(ref, base));
    // The board's scripts, its stylesheet and its icons: all there, all from the API itself.
    expect(resources.filter((url) => url.pathname.endsWith('.js')).length).toBeGreaterThan(0);
    expect(resources.filter((url) => url.pathname.endsWith('.css')).length).toBeGreaterThan(0);
    expect(resources.filter((url) => url.origin !== own).map(String)).toEqual([]);
    // The stylesheets it loads pull in nothing from elsewhere either (fonts, @import).
    for (const sheet of resources.filter((url) => url.pathname.endsWith('.css'))) {
      const css = await get(sheet.pathname);
      expect(css.statusCode, sheet.pathname).toBe(200);
      const outside = resourceUrls(css.body)
        .map((ref) => new URL(ref, sheet))
        .filter((url) => url.protocol !== 'data:' && url.origin !== own);
      expect(outside.map(String), sheet.pathname).toEqual([]);
    }
  });

  it('strips links to other origins from HTML, whatever their scheme or quoting, and keeps its own', () => {
    const html = [
      '<link href="https://fonts.googleapis.com/css2?family=IBM+Plex+Sans" rel="stylesheet">',
      "<link rel='preconnect' href='//fonts.gstatic.com' crossorigin>",
      '<LINK REL=stylesheet HREF=http://cdn.example/x.css>',
      '<link href="static/css/main.css" rel="stylesheet">',
      '<link rel="icon" href="static/images/logo.svg">',
    ].join('\n');
    expect(withoutExternalResources(html)).toBe(
      '<link href="static/css/main.css" rel="stylesheet">\n<link rel="icon" href="static/images/logo.svg">',
    );
  });

  it('refuses tokens of any length but the right one, in the contract shape', async () => {
    for (const [i, authorization] of [
      'Bearer ',
      'Bearer x',
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
      `Bearer ${ADMIN_TOKEN}${ADMIN_TOKEN}`,
      `Bearer ${'é'.repeat(ADMIN_TOKEN.length)}`,
      basic(''),
      basic(ADMIN_TOKEN.toUpperCase()),
      'Basic !!not-base64!!',
      'Digest x',
    ].entries()) {
      const response = await fromAddress(`192.0.2.${100 + i}`, authorization);
      expect(response.statusCode, authorization).toBe(401);
      expect(response.json()).toMatchObject({ error: { code: 'unauthorized' } });
    }
    expect((await fromAddress('192.0.2.1', `Bearer ${ADMIN_TOKEN}`)).statusCode).toBe(200);
  });

  it('answers 429 with Retry-After to an address past its wrong tokens, whatever it sends then', async () => {
    const { maxFailures, windowMs } = ADMIN_FAILURE_LIMIT;
    expect([maxFailures, windowMs]).toEqual([10, 60_000]);
    for (let i = 0; i < maxFailures; i++) {
      expect((await fromAddress('192.0.2.10', basic(`guess-${i}`))).statusCode).toBe(401);
    }
    for (const authorization of [basic('guess-again'), `Bearer ${ADMIN_TOKEN}`, undefined]) {
      const refused = await fromAddress('192.0.2.10', authorization);
      expect(refused.statusCode, authorization).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(windowMs / 1000);
      expect(refused.json()).toMatchObject({ error: { code: 'too_many_requests' } });
    }
    // Other addresses keep their own allowance.
    expect((await fromAddress('192.0.2.11', `Bearer ${ADMIN_TOKEN}`)).statusCode).toBe(200);
  });

  it('counts only wrong tokens, and forgets them after the right one', async () => {
    // A browser's first request carries no credentials: it is asked for them, not counted.
    for (let i = 0; i < 3 * ADMIN_FAILURE_LIMIT.maxFailures; i++) {
      expect((await fromAddress('192.0.2.20')).statusCode).toBe(401);
    }
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < ADMIN_FAILURE_LIMIT.maxFailures - 1; i++) {
        expect((await fromAddress('192.0.2.20', basic('typo'))).statusCode).toBe(401);
      }
      expect((await fromAddress('192.0.2.20', basic(ADMIN_TOKEN))).statusCode).toBe(200);
    }
  });

  it('counts an IPv6 /64 as one client', async () => {
    for (let i = 0; i < ADMIN_FAILURE_LIMIT.maxFailures; i++) {
      expect((await fromAddress(`2001:db8:0:7::${i + 1}`, basic('guess'))).statusCode).toBe(401);
    }
    expect((await fromAddress('2001:db8:0:7:ffff::9', `Bearer ${ADMIN_TOKEN}`)).statusCode).toBe(429);
    expect((await fromAddress('2001:db8:0:8::1', `Bearer ${ADMIN_TOKEN}`)).statusCode).toBe(200);
  });

  it('never answers 5xx, nor opens without the token, whatever the encoding of the path', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const admin = `Bearer ${ADMIN_TOKEN}`;
    const tenant = `Bearer ${TENANT_A_KEY}`;
    // [path, without credentials, with the operator token, with a tenant key]
    const cases: Array<[string, number, number, number]> = [
      // Percent-encoded letters route where the letters do: the dashboard, behind its token.
      ['/admin/%71ueues/api/queues', 401, 200, 401],
      ['/%61dmin/queues', 401, 200, 401],
      ['/admin/queues/%61pi/%71ueues', 401, 200, 401],
      ['/admin/queues/api/queues?%zz=1', 401, 200, 401],
      // Double-encoded: `%2571` is a literal `%71`, no route of the dashboard.
      ['/admin/%2571ueues/api/queues', 401, 401, 404],
      ['/admin/queues/static/%252e%252e/%252e%252e/package.json', 401, 404, 401],
      // Overlong UTF-8 (`%c0%ae` for `.`, `%c0%af` for `/`) and broken escapes.
      ['/admin/queues/%c0%ae%c0%ae/api/queues', 400, 400, 400],
      ['/admin/%c0%afqueues', 400, 400, 400],
      ['/admin/queues/api/queues/%ZZ', 400, 400, 400],
      ['/admin/queues/%', 400, 400, 400],
      // Dot segments, plain and encoded: no way out of the dashboard or its static files.
      ['/admin/queues/../queues', 404, 404, 404],
      ['/admin/queues/../../v1/sessions', 404, 404, 404],
      ['/admin/queues/%2e%2e/%2e%2e/v1/sessions', 404, 404, 404],
      ['/admin/queues/./api/queues', 404, 404, 404],
      ['/admin/queues/static/../../../../../../etc/passwd', 401, 403, 401],
      ['/admin/queues/static/%2e%2e/%2e%2e/%2e%2e/package.json', 401, 403, 401],
      ['/admin/queues/static/..%2f..%2f..%2fpackage.json', 401, 404, 401],
      ['/admin/queues/static/%00', 401, 403, 401],
      // Mixed case is another path (routes are case-sensitive): a tenant route that does not exist.
      ['/ADMIN/QUEUES', 401, 401, 404],
      ['/Admin/%71ueues/api/queues', 401, 401, 404],
      ['/admin%2fqueues', 401, 401, 404],
    ];
    for (const [path, anonymous, operator, tenantKey] of cases) {
      const answers = [
        (await rawGet(port, path)).status,
        (await rawGet(port, path, admin)).status,
        (await rawGet(port, path, tenant)).status,
      ];
      expect(answers, path).toEqual([anonymous, operator, tenantKey]);
    }
  });

  it("keeps the status of the API's own errors thrown on its routes, which bull-board would answer 500", async () => {
    const bare = Fastify();
    // A hook of the whole server that refuses a request, as the tenant auth does on other routes.
    bare.addHook('onRequest', async (request) => {
      if (request.headers['x-refuse'] === 'yes') throw new ApiError(429, 'too_many_requests', 'slow down');
    });
    await registerQueueDashboard(bare, { queues: replica.queues, adminToken: ADMIN_TOKEN });
    try {
      const refused = await bare.inject({
        method: 'GET',
        url: '/admin/queues/api/queues',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-refuse': 'yes' },
      });
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toEqual({ error: { code: 'too_many_requests', message: 'slow down' } });
    } finally {
      await bare.close();
    }
  });
});

/**
 * Every URL a page or stylesheet makes the browser load: `src`, `href` of `<link>`, `srcset`,
 * `url(...)` (inline styles and CSS) and `@import`. Links a user may follow (`<a href>`) are not loads.
 */
function resourceUrls(text: string): string[] {
  const urls: string[] = [];
  for (const [, tag = ''] of text.matchAll(
    /<((?:link|script|img|source|iframe|embed|object|video|audio)\b[^>]*)>/gi,
  )) {
    for (const [, , quoted, bare] of tag.matchAll(
      /\b(src|href|data|poster)\s*=\s*(?:["']([^"']*)["']|([^\s>]+))/gi,
    ))
      urls.push(quoted ?? bare ?? '');
    for (const [, set = ''] of tag.matchAll(/\bsrcset\s*=\s*["']([^"']*)["']/gi))
      urls.push(...set.split(',').map((candidate) => candidate.trim().split(/\s+/)[0]!));
  }
  for (const [, , url = ''] of text.matchAll(/url\(\s*(["']?)([^"')]+)\1\s*\)/gi)) urls.push(url);
  for (const [, url = ''] of text.matchAll(/@import\s+["']([^"']+)["']/gi)) urls.push(url);
  return urls.filter((url) => url !== '' && !url.startsWith('#'));
}
