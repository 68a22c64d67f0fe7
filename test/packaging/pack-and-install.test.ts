/**
 * @compactor/contract and @compactor/client as someone outside this repository gets them: packed
 * by `npm run pack:packages`, installed from the tarballs into a fresh project in the system's
 * temp directory, type-checked there by the repository's TypeScript under `nodenext` and
 * `bundler` resolution, compiled, and run with plain node (no tsx) against the real API.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TENANT_A_KEY } from '@compactor/api/testing';
import { packPackages } from '../../scripts/pack-packages';
import { useLiveApi } from '../client/live-api';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

// Async child processes only: the API answering the program runs in this process.
const live = useLiveApi();

let work: string;
let project: string;
let packed: ReturnType<typeof packPackages>;

/** What the installed project's tsconfig says, per resolution mode. */
const compilerOptions = {
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out' },
  bundler: { module: 'preserve', moduleResolution: 'bundler', noEmit: true },
};

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'compactor-pack-'));
  packed = packPackages(work);
  project = path.join(work, 'consumer');
  const typesNode = JSON.parse(
    readFileSync(path.join(root, 'node_modules', '@types', 'node', 'package.json'), 'utf8'),
  ) as { version: string };
  const manifest = {
    name: 'compactor-consumer',
    private: true,
    type: 'module',
    dependencies: {
      '@compactor/contract': `file:${packed.tarballs['@compactor/contract']}`,
      '@compactor/client': `file:${packed.tarballs['@compactor/client']}`,
      '@types/node': typesNode.version,
    },
  };
  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify(manifest, null, 2));
  for (const file of ['main.ts', 'types-are-real.ts']) {
    copyFileSync(path.join(here, 'consumer', file), path.join(project, file));
  }
  for (const [mode, options] of Object.entries(compilerOptions)) {
    const tsconfig = {
      compilerOptions: {
        target: 'ES2022',
        strict: true,
        types: ['node'],
        // The packed declarations are checked too: an import in them that does not resolve fails here.
        skipLibCheck: false,
        ...options,
      },
      files: ['main.ts', 'types-are-real.ts'],
    };
    writeFileSync(path.join(project, `tsconfig.${mode}.json`), JSON.stringify(tsconfig, null, 2));
  }
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: project,
  });
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const checks = new Map<string, ReturnType<typeof run>>();
/** Runs tsc on the installed project once per mode (`nodenext` also compiles main.js to out/). */
function typeCheck(mode: string) {
  let check = checks.get(mode);
  if (!check) {
    check = run(process.execPath, [tsc, '-p', `tsconfig.${mode}.json`], { cwd: project });
    checks.set(mode, check);
  }
  return check;
}

const installedManifest = (name: string) =>
  JSON.parse(readFileSync(path.join(project, 'node_modules', name, 'package.json'), 'utf8')) as Record<
    string,
    unknown
  >;

describe('the packed packages', () => {
  it('ship built ESM and declarations, versioned together, the client pinned to the same contract', () => {
    const contract = installedManifest('@compactor/contract');
    const client = installedManifest('@compactor/client');
    for (const manifest of [contract, client]) {
      expect(manifest['version']).toBe(packed.version);
      expect(manifest['private']).toBeUndefined();
      expect(manifest['type']).toBe('module');
      expect(manifest['files']).toEqual(['dist']);
      expect(manifest['exports']).toMatchObject({
        '.': { types: './dist/index.d.ts', import: './dist/index.js' },
      });
    }
    expect(client['dependencies']).toMatchObject({ '@compactor/contract': packed.version });
    const built = readFileSync(path.join(project, 'node_modules/@compactor/contract/dist/index.js'), 'utf8');
    // Relative imports node can run: with their extension.
    expect(built).toContain("from './messages.js'");
    expect(built).not.toMatch(/from '\.\/[a-z-]+'/);
  });

  // tsc on the installed project takes a few seconds alone, and over 30 s on a loaded 2-core machine.
  it.each(Object.keys(compilerOptions))(
    'type-check a program under moduleResolution %s',
    { timeout: 120_000 },
    async (mode) => {
      await expect(typeCheck(mode)).resolves.toBeDefined();
    },
  );

  it(
    'run with plain node against the live API: create, append, patch, read the context',
    { timeout: 120_000 },
    async () => {
      await typeCheck('nodenext');
      const { stdout } = await run(
        process.execPath,
        [path.join(project, 'out', 'main.js'), live.url, TENANT_A_KEY, 'packed-1'],
        { cwd: project },
      );
      const seen = JSON.parse(stdout) as Record<string, unknown>;
      const call = {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{"path":"src"}' } },
        ],
      };
      expect(seen).toEqual({
        seqs: [1, 2],
        unfinished: [
          { role: 'user', content: 'What is in src?' },
          call,
          { role: 'tool', tool_call_id: 'call_1', content: '[Tool execution was interrupted]' },
        ],
        messages: [
          { role: 'user', content: 'What is in src?' },
          call,
          { role: 'tool', tool_call_id: 'call_1', content: 'app.ts' },
        ],
        contextMessages: 2,
        contextParses: true,
        missing: '404 not_found',
      });
      // The API holds what the program wrote.
      const history = await live.client().listMessages('packed-1');
      expect(history.messages.map((m) => m.id)).toEqual(['u1', 'a1']);
    },
  );
});
