/**
 * The Python client (clients/python) against the real API: its `unittest` suite runs in a child
 * `python3` with the URL of this file's API (own database, real queues, workers summarising with
 * the LLM stub) and two tenants' keys. Every test must run and pass; none may be skipped.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TENANT_A_KEY, TENANT_B_KEY } from '@compactor/api/testing';
import { useLiveApi } from './live-api';

const live = useLiveApi({ workers: true });
const clientDir = fileURLToPath(new URL('../../clients/python', import.meta.url));
const testsDir = `${clientDir}/tests`;

/** The test methods the suite defines (`def test_…`), to check that discovery found them all. */
function definedTests(): number {
  return readdirSync(testsDir)
    .filter((name) => /^test_.*\.py$/.test(name))
    .reduce(
      (sum, name) =>
        sum + (readFileSync(`${testsDir}/${name}`, 'utf8').match(/^\s+def test_/gm)?.length ?? 0),
      0,
    );
}

/** Runs a command to its end without blocking this process (the API it calls lives here). */
function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number) {
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd: clientDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('clients/python', () => {
  it('passes its unittest suite against the live API', { timeout: 120_000 }, async () => {
    const { code, output } = await run(
      'python3',
      ['-m', 'unittest', 'discover', '-s', 'tests', '-v'],
      {
        ...process.env,
        PYTHONPATH: `${clientDir}/src`,
        PYTHONDONTWRITEBYTECODE: '1',
        COMPACTOR_URL: live.url,
        COMPACTOR_KEY: TENANT_A_KEY,
        COMPACTOR_OTHER_KEY: TENANT_B_KEY,
        COMPACTOR_LLM_URL: live.stub.url,
      },
      100_000,
    );
    expect(code, output).toBe(0);
    const ran = /^Ran (\d+) tests? in /m.exec(output);
    expect(Number(ran?.[1]), output).toBe(definedTests());
    expect(output).toMatch(/^OK$/m);
    expect(output).not.toMatch(/skipped/);
  });
});
