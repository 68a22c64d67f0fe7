import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

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
      // Its own database and queue prefix, as the variables name them (no other run's).
      DEMO_DATABASE: `demo_${inject('testRunId')}`.toLowerCase().replace(/[^a-z0-9_]/g, '_'),
      DEMO_QUEUE_PREFIX: `{demo-${inject('testRunId')}}`,
    };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    delete env.LLM_SUMMARIZER_MODEL;
    const { code, output } = await runDemo(env);
    expect(output).toContain(`/${env.DEMO_DATABASE} (dropped; the API recreates it)`);
    expect(output).toContain(`queue prefix ${env.DEMO_QUEUE_PREFIX}`);
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
