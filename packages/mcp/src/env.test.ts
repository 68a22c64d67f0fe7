/**
 * The stdio server's environment: the API's URL is required and must be http(s); the key is
 * optional (an open API). A bad environment stops the bin before it speaks the protocol: exit 2
 * and the reason on stderr, nothing on stdout (its client reads stdout as JSON-RPC).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseMcpEnv } from './env';

const BIN = fileURLToPath(new URL('../bin/compactor-mcp.mjs', import.meta.url));

describe('parseMcpEnv', () => {
  it.each([
    [
      { COMPACTOR_URL: 'http://127.0.0.1:3000' },
      { COMPACTOR_URL: 'http://127.0.0.1:3000', COMPACTOR_API_KEY: null },
    ],
    [
      { COMPACTOR_URL: 'https://compactor.example/api', COMPACTOR_API_KEY: ' key-1 ' },
      { COMPACTOR_URL: 'https://compactor.example/api', COMPACTOR_API_KEY: 'key-1' },
    ],
    [
      { COMPACTOR_URL: 'http://localhost:3000', COMPACTOR_API_KEY: '' },
      { COMPACTOR_URL: 'http://localhost:3000', COMPACTOR_API_KEY: null },
    ],
  ])('accepts %j', (env, expected) => {
    expect(parseMcpEnv(env)).toEqual({ env: expected });
  });

  it.each([
    [{}, 'COMPACTOR_URL is not set'],
    [{ COMPACTOR_API_KEY: 'k' }, 'COMPACTOR_URL is not set'],
    [{ COMPACTOR_URL: 'ftp://host' }, 'COMPACTOR_URL must be the http(s) URL'],
    [{ COMPACTOR_URL: 'not a url' }, 'COMPACTOR_URL must be the http(s) URL'],
  ])('refuses %j, saying why', (env, reason) => {
    const parsed = parseMcpEnv(env);
    expect(parsed).toHaveProperty('error');
    expect((parsed as { error: string }).error).toContain(reason);
  });
});

describe('the compactor-mcp bin', () => {
  it('exits 2 without COMPACTOR_URL, the reason on stderr and nothing on stdout', async () => {
    const { COMPACTOR_URL: _url, ...env } = process.env;
    const child = spawn(process.execPath, [BIN], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = await once(child, 'close');
    expect(code).toBe(2);
    expect(stderr).toContain('COMPACTOR_URL is not set');
    expect(stdout).toBe('');
  });
});
