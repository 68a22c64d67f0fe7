import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Runs one statement on the test server's `postgres` database. */
async function admin<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: inject('databaseUrl') });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

const databaseExists = async (name: string) =>
  (await admin('select 1 from pg_database where datname = $1', [name])).length > 0;

async function keysUnder(prefix: string): Promise<string[]> {
  const redis = new Redis(inject('redisUrl'));
  try {
    return await redis.keys(`${prefix.replace(/[{}[\]*?]/g, '\\$&')}*`);
  } finally {
    redis.disconnect();
  }
}

/** The README's first command, as `scripts/demo.sh` runs it once installed: its exit code and output. */
function runDemo(
  env: NodeJS.ProcessEnv,
  args: string[] = [],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts', '--pace', '0', ...args], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), 150_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the demo (README quick start, step 1)', () => {
  it('compacts the built-in session end to end and every check passes', { timeout: 180_000 }, async () => {
    // The bundled stub, whatever provider the caller's shell names; no colours in the output.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: inject('databaseUrl'),
      REDIS_URL: inject('redisUrl'),
      NO_COLOR: '1',
    };
    // The run names its own database and queue prefix, as a newcomer's first run does.
    for (const name of [
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      'LLM_SUMMARIZER_MODEL',
      'DEMO_DATABASE',
      'DEMO_QUEUE_PREFIX',
    ])
      delete env[name];
    const { code, output } = await runDemo(env);
    const database = /\/(compactor_demo_\d{14}_[0-9a-f]{4}) \(scratch, dropped when the demo ends\)/.exec(
      output,
    )?.[1];
    const prefix = /queue prefix (\{compactor-demo-\d{14}-[0-9a-f]{4}\})/.exec(output)?.[1];
    expect(database, output.slice(0, 2000)).toBeDefined();
    expect(prefix, output.slice(0, 2000)).toBeDefined();
    // Gone with the run: its database and every key under its prefix.
    expect(await databaseExists(database!)).toBe(false);
    expect(await keysUnder(prefix!)).toEqual([]);
    // The policy it prints is the one the API resolved for the session it sent.
    expect(output).toContain(
      'policy  default preset with pruning.minimumTokens, pruning.protectTokens overridden (resolved by the API)',
    );
    expect(output).toMatch(/compactions?: \d+ completed/);
    expect(output).toMatch(/the next prompt fits/);
    expect(output).not.toContain('✗');
    expect(code, output.slice(-3000)).toBe(0);
  });
});

describe('the demo refuses a database it must not drop', () => {
  it.each([
    [['--database', 'compactor'], 'the database DATABASE_URL names'],
    [['--database', 'postgres'], "the server's own database"],
    [['--queue-prefix', 'a*'], '--queue-prefix (DEMO_QUEUE_PREFIX) must be'],
  ])('%j: exits 2 before touching a service', async (args, message) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/compactor',
      REDIS_URL: 'redis://127.0.0.1:1',
      NO_COLOR: '1',
    };
    const { code, output } = await runDemo(env, args);
    expect(code, output).toBe(2);
    expect(output).toContain(message);
    expect(output).not.toContain('not reachable');
  });
});

describe('the demo on a server where the database it is given is not its own', () => {
  it('refuses to drop it, says why, and leaves it whole', async () => {
    const name = `demo_theirs_${inject('testRunId')}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
    await admin(`create database ${name}`);
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: inject('databaseUrl'),
        REDIS_URL: inject('redisUrl'),
        NO_COLOR: '1',
        DEMO_DATABASE: name,
        DEMO_QUEUE_PREFIX: `{demo-theirs-${inject('testRunId')}}`,
      };
      const { code, output } = await runDemo(env);
      expect(code, output).toBe(2);
      expect(output).toContain(`refusing to drop database "${name}": Compactor did not create it`);
      expect(output).not.toContain('── Session');
      expect(await databaseExists(name)).toBe(true);
    } finally {
      await admin(`drop database if exists ${name} with (force)`);
    }
  });
});

describe('the demo without Postgres or Redis', () => {
  it('names each missing service, starts nothing and exits 2', async () => {
    // Nothing listens on port 1: both checks fail at once.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/compactor',
      REDIS_URL: 'redis://127.0.0.1:1',
      NO_COLOR: '1',
    };
    const { code, output } = await runDemo(env);
    expect(code, output).toBe(2);
    expect(output).toContain('PostgreSQL is not reachable at postgres://postgres@127.0.0.1:1/compactor');
    expect(output).toContain('DATABASE_URL is set: check that server, or unset DATABASE_URL');
    expect(output).toContain('Redis is not reachable at redis://127.0.0.1:1');
    expect(output).toContain('REDIS_URL is set: check that server, or unset REDIS_URL');
    expect(output).not.toContain('── Session');
  });
});
