import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { databaseUrlFor } from '@compactor/testing';
import {
  createDatabase,
  ensureDatabase,
  insertApiKey,
  migrateDatabase,
  newId,
  quoteIdent,
} from '@compactor/db';
import { hashApiKey } from './http/auth';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), 'main.ts');
const created: string[] = [];
const children: ChildProcess[] = [];

function freshDatabaseUrl(): string {
  const name = `compactor_test_${inject('testRunId')}_main_${randomBytes(3).toString('hex')}`;
  created.push(name);
  return databaseUrlFor(inject('databaseUrl'), name);
}

/** Starts `main.ts` as `npm run api` would, collecting its output. */
function startApi(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: inject('redisUrl'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`API did not start:\n${output}`)), 60_000);
    child.stdout.on('data', () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    void exited.then(() => (clearTimeout(timer), reject(new Error(`API exited:\n${output}`))));
  });
  listening.catch(() => undefined); // tests that expect an exit never await it
  return { child, listening, exited, output: () => output };
}

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  const client = new pg.Client({ connectionString: inject('databaseUrl') });
  await client.connect();
  for (const name of created) await client.query(`drop database if exists ${quoteIdent(name)} with (force)`);
  await client.end();
});

describe('npm run api (main.ts)', () => {
  it('creates and migrates a missing database, serves, and drains on SIGTERM', async () => {
    // Development without keys: open, with a warning.
    const api = startApi({ DATABASE_URL: freshDatabaseUrl(), API_KEYS: '', NODE_ENV: 'development' });
    const url = await api.listening;
    expect(api.output()).toContain('the API is OPEN');
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
    const created = await fetch(`${url}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'main-1', model: { id: 'gpt-4o' } }),
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    expect(api.output()).toContain('stopped');
  });

  it('refuses to start on an unmigrated database when told not to migrate, saying what to do', async () => {
    const url = freshDatabaseUrl();
    await ensureDatabase(url);
    const api = startApi({ DATABASE_URL: url, MIGRATE_ON_START: 'false' });
    expect(await api.exited).toBe(1);
    expect(api.output()).toMatch(/lacks \d+ of \d+ migrations; run `npm run db:migrate`/);
  });

  it('exits with a readable error on a bad environment', async () => {
    const api = startApi({ DATABASE_URL: freshDatabaseUrl(), PORT: 'eighty' });
    expect(await api.exited).toBe(1);
    expect(api.output()).toMatch(/invalid environment[\s\S]*PORT/);
  });

  it('refuses to start in production without any API key, naming both ways out, and never listens', async () => {
    const api = startApi({ DATABASE_URL: freshDatabaseUrl(), API_KEYS: '', NODE_ENV: 'production' });
    expect(await api.exited).toBe(1);
    await expect(api.listening).rejects.toThrow(/API exited/);
    expect(api.output()).toMatch(/refusing to start: NODE_ENV=production and no API key/);
    expect(api.output()).toContain('Set API_KEYS');
    expect(api.output()).toContain('ALLOW_UNAUTHENTICATED=true');
    expect(api.output()).not.toContain('Server listening');
  });

  it('starts open in production when ALLOW_UNAUTHENTICATED=true says so', async () => {
    const api = startApi({
      DATABASE_URL: freshDatabaseUrl(),
      API_KEYS: '',
      NODE_ENV: 'production',
      ALLOW_UNAUTHENTICATED: 'true',
    });
    const url = await api.listening;
    expect(api.output()).toContain('the API is OPEN');
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });

  it('starts in production with keys only in the keys table, and requires them', async () => {
    const databaseUrl = freshDatabaseUrl();
    await ensureDatabase(databaseUrl);
    await migrateDatabase(databaseUrl);
    const database = createDatabase(databaseUrl, { max: 1 });
    await insertApiKey(database.db, {
      id: newId('key'),
      tenantId: 'acme',
      name: 'main-test',
      keyHash: hashApiKey('table-key'),
    });
    await database.close();
    const api = startApi({ DATABASE_URL: databaseUrl, API_KEYS: '', NODE_ENV: 'production' });
    const url = await api.listening;
    expect(api.output()).not.toContain('the API is OPEN');
    expect((await fetch(`${url}/v1/sessions/nope`)).status).toBe(401);
    const authorized = await fetch(`${url}/v1/sessions/nope`, {
      headers: { authorization: 'Bearer table-key' },
    });
    expect(authorized.status).toBe(404);
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });

  it('answers a body over BODY_LIMIT_BYTES with its 413 and error body, never a reset upload', async () => {
    const api = startApi({
      DATABASE_URL: freshDatabaseUrl(),
      API_KEYS: '',
      BODY_LIMIT_BYTES: String(1024 * 1024),
    });
    const url = await api.listening;
    // Four times the limit, from another process: the client is still uploading when the server
    // knows. The answer must reach it every time (it used to be EPIPE in 2 of 5).
    const body = new Uint8Array(32 * 1024 * 1024).fill(0x61);
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await fetch(`${url}/v1/sessions/main-big/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(413);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    }
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });

  it('serves /metrics on METRICS_PORT only, not on the public port', async () => {
    const api = startApi({ DATABASE_URL: freshDatabaseUrl(), API_KEYS: 'acme:k', METRICS_PORT: '0' });
    const url = await api.listening;
    const metricsUrl = /metrics served at (http:\/\/127\.0\.0\.1:\d+)/.exec(api.output())?.[1];
    expect(metricsUrl, api.output()).toBeDefined();
    expect(new URL(metricsUrl!).port).not.toBe(new URL(url).port);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const scraped = await fetch(`${metricsUrl}/metrics`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain(
      'compactor_api_requests_total{method="GET",route="/healthz",status="200"} 1',
    );
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    expect((await fetch(`${metricsUrl}/healthz`)).status).toBe(404);
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });
});
