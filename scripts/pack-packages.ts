/**
 * Builds @compactor/contract and @compactor/client to ESM JavaScript with declarations and packs
 * them as npm tarballs, installable outside this repository:
 *
 *   npm run pack:packages [-- --out <dir>]      (default: dist/packages)
 *
 * In the repository both packages export their TypeScript source (`./src/index.ts`), so the apps,
 * vitest and tsc run without a build step; their manifests stay `private` so the source-exporting
 * manifest is never published as is. Each tarball is packed from a staging directory instead:
 * the package's `dist/`, its README, and a manifest generated from the repository's one with the
 * `dist` exports (`types` / `import`), `files`, no `private`, and the client depending on the
 * contract at exactly its own version (the two are versioned together).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** The packed packages, dependencies first (the client is built against the contract's `dist`). */
export const PUBLISHED_PACKAGES = [
  { name: '@compactor/contract', dir: 'packages/contract' },
  { name: '@compactor/client', dir: 'packages/client' },
] as const;

type Manifest = Record<string, unknown> & { name: string; version: string };

const readManifest = (dir: string) =>
  JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as Manifest;

/**
 * The published manifest of a package: the repository's without `private`, `scripts` and
 * `devDependencies`, exporting `dist`, with every sibling published package pinned at `version`.
 */
export function publishedManifest(manifest: Manifest, version: string): Record<string, unknown> {
  const { private: _private, scripts: _scripts, devDependencies: _dev, exports: _src, ...kept } = manifest;
  const dependencies = Object.fromEntries(
    Object.entries((manifest['dependencies'] as Record<string, string> | undefined) ?? {}).map(
      ([name, range]) => [name, PUBLISHED_PACKAGES.some((p) => p.name === name) ? version : range],
    ),
  );
  return {
    ...kept,
    types: './dist/index.d.ts',
    exports: {
      '.': { types: './dist/index.d.ts', import: './dist/index.js' },
      './package.json': './package.json',
    },
    files: ['dist'],
    sideEffects: false,
    dependencies,
  };
}

/** The version both packages share; throws when they drift apart. */
export function sharedVersion(): string {
  const versions = new Set(PUBLISHED_PACKAGES.map((p) => readManifest(p.dir).version));
  if (versions.size !== 1) {
    throw new Error(
      `@compactor/contract and @compactor/client must share a version: ${[...versions].join(', ')}`,
    );
  }
  return [...versions][0] as string;
}

/** Builds and packs both packages into `outDir`; returns each tarball's absolute path by name. */
export function packPackages(outDir: string): { version: string; tarballs: Record<string, string> } {
  const version = sharedVersion();
  const stageRoot = path.join(outDir, 'stage');
  rmSync(stageRoot, { recursive: true, force: true });
  const tarballs: Record<string, string> = {};
  for (const { name, dir } of PUBLISHED_PACKAGES) {
    const packageDir = path.join(root, dir);
    // A clean dist: a module deleted from src must not linger in the tarball.
    rmSync(path.join(packageDir, 'dist'), { recursive: true, force: true });
    execFileSync(process.execPath, [tsc, '-p', path.join(packageDir, 'tsconfig.build.json')], {
      cwd: packageDir,
      stdio: 'inherit',
    });
    const stage = path.join(stageRoot, path.basename(dir));
    mkdirSync(stage, { recursive: true });
    cpSync(path.join(packageDir, 'dist'), path.join(stage, 'dist'), { recursive: true });
    if (existsSync(path.join(packageDir, 'README.md'))) {
      cpSync(path.join(packageDir, 'README.md'), path.join(stage, 'README.md'));
    }
    writeFileSync(
      path.join(stage, 'package.json'),
      `${JSON.stringify(publishedManifest(readManifest(dir), version), null, 2)}\n`,
    );
    const packed = execFileSync('npm', ['pack', stage, '--pack-destination', outDir, '--json'], {
      cwd: outDir,
      encoding: 'utf8',
    });
    const [{ filename }] = JSON.parse(packed) as [{ filename: string }];
    tarballs[name] = path.join(outDir, filename);
  }
  return { version, tarballs };
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  const flag = process.argv.indexOf('--out');
  const outDir = path.resolve(
    flag >= 0 ? (process.argv[flag + 1] ?? '') : path.join(root, 'dist', 'packages'),
  );
  mkdirSync(outDir, { recursive: true });
  const { tarballs } = packPackages(outDir);
  for (const tarball of Object.values(tarballs)) console.log(tarball);
}
