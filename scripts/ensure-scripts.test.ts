/**
 * The quick start's first command (the demo) installs nothing as root: only the test command's
 * `scripts/ensure-test-tools.sh` installs chromium, for one replay-report test. Both scripts run
 * here with stand-ins for the commands they call, recording what they were asked to do.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
let bin: string;

/** A directory of stand-in commands: each records its arguments in `calls`, and exits 0. */
function standIns(names: string[], idOutput: string): string {
  bin = mkdtempSync(join(tmpdir(), 'compactor-ensure-'));
  for (const name of names) {
    const script = join(bin, name);
    writeFileSync(script, `#!/bin/sh\necho "${name} $*" >> "${join(bin, 'calls')}"\n`);
    chmodSync(script, 0o755);
  }
  const id = join(bin, 'id');
  writeFileSync(id, `#!/bin/sh\necho ${idOutput}\n`);
  chmodSync(id, 0o755);
  return bin;
}

function run(script: string, path: string): { calls: string[]; stderr: string } {
  // Only the stand-ins: a chromium installed on this machine must not hide the install step.
  const env = { PATH: path, HOME: tmpdir() };
  let stderr = '';
  try {
    execFileSync('/bin/bash', [join(ROOT, 'scripts', script)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    stderr = String((error as { stderr?: Buffer }).stderr ?? '');
    throw new Error(`${script} failed: ${stderr}`, { cause: error });
  }
  const callsFile = join(path, 'calls');
  return { calls: existsSync(callsFile) ? readFileSync(callsFile, 'utf8').trim().split('\n') : [], stderr };
}

afterEach(() => {
  if (bin) rmSync(bin, { recursive: true, force: true });
});

describe('the quick start scripts', () => {
  it('ensure-services.sh (the demo runs it) checks the services and installs nothing, as root too', () => {
    const path = standIns(['pg_isready', 'redis-cli', 'apt-get', 'pg_ctlcluster', 'redis-server'], '0');
    const { calls } = run('ensure-services.sh', path);
    expect(calls.some((call) => call.startsWith('pg_isready'))).toBe(true);
    expect(calls.some((call) => call.startsWith('redis-cli'))).toBe(true);
    expect(calls.filter((call) => call.startsWith('apt-get'))).toEqual([]);
  });

  it('ensure-test-tools.sh (the test command runs it) installs chromium as root when it is missing', () => {
    const path = standIns(['apt-get'], '0');
    const { calls } = run('ensure-test-tools.sh', path);
    expect(calls).toContain('apt-get install -y -qq chromium');
  });

  it('the demo runs only ensure-services.sh, and .ci/run runs both', () => {
    const demo = readFileSync(join(ROOT, 'scripts', 'demo.sh'), 'utf8');
    expect(demo).toContain('scripts/ensure-services.sh');
    expect(demo).not.toMatch(/ensure-test-tools|apt-get/);
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    expect(ci).toContain('bash scripts/ensure-services.sh');
    expect(ci).toContain('bash scripts/ensure-test-tools.sh');
  });
});
