/**
 * The image (infra/docker/Dockerfile) against the code it runs: a non-root user, node under tini,
 * production dependencies that hold everything the processes import, a Node LTS every production
 * dependency accepts, build secrets never baked in. Parsed here; no Docker needed.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appOf, APPS, dockerfile, k8sContainers, read, ROOT } from './manifests';

describe('the image', () => {
  const lines = dockerfile
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const finalStage = lines.slice(lines.findLastIndex((l) => /^FROM\s/i.test(l)));
  const instruction = (name: string) => finalStage.filter((l) => new RegExp(`^${name}\\s`, 'i').test(l));
  const exec = (line: string) => JSON.parse(line.replace(/^\S+\s+/, '')) as string[];

  it('runs as a numeric non-root user', () => {
    const user = instruction('USER').at(-1);
    expect(user, 'USER in the final stage').toBeDefined();
    const uid = user!.split(/\s+/)[1]!.split(':')[0]!;
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
    // The Kubernetes pods run as the same user.
    for (const { pod, where } of k8sContainers)
      expect(pod.securityContext?.runAsUser, where).toBe(Number(uid));
  });

  it('starts node under tini, never through npm, in production mode', () => {
    const entrypoint = instruction('ENTRYPOINT').at(-1);
    const cmd = instruction('CMD').at(-1);
    expect(exec(entrypoint!)).toEqual(['/usr/bin/tini', '--']);
    appOf(exec(cmd!), 'the Dockerfile CMD');
    expect(finalStage.join('\n')).not.toMatch(/\bnpm\s+(run|start)\b/);
    expect(instruction('ENV').join(' ')).toMatch(/\bNODE_ENV=production\b/);
    const healthcheck = finalStage.find((l) => /^HEALTHCHECK\s/i.test(l));
    expect(healthcheck).toMatch(/infra\/docker\/healthcheck\.mjs/);
    expect(instruction('COPY').join('\n')).toMatch(/infra\/docker\/healthcheck\.mjs/);
  });

  it('installs production dependencies only, and they include everything the processes import', () => {
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
    };
    const production = (name: string) => {
      const entry = lock.packages[`node_modules/${name}`];
      return entry !== undefined && !entry.dev && !entry.devOptional;
    };
    expect(production('tsx'), 'tsx is installed by npm ci --omit=dev').toBe(true);
    const imports = runtimeImports(Object.keys(APPS));
    for (const name of ['fastify', 'bullmq', 'openai', 'pg', 'pino']) expect(imports).toContain(name);
    const missing = [...imports].filter((name) => !production(name));
    expect(missing).toEqual([]);
  });

  it('leaves dependencies and secrets out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['**/node_modules', '.git', '.env', '.npmrc', '**/.npmrc'])
      expect(ignored).toContain(entry);
  });

  it('runs a supported Node LTS that every production dependency declares it supports (engines.node)', () => {
    const image = /^ARG NODE_IMAGE=node:(\d+)(?:\.(\d+))?(?:\.(\d+))?-/m.exec(dockerfile);
    expect(image, 'ARG NODE_IMAGE=node:<version>-…').not.toBeNull();
    const [, major, minor = '0', patch = '0'] = image!;
    // The lowest version the tag can resolve to: a floating tag only moves up.
    const version = `${major}.${minor}.${patch}`;
    // Even majors are the LTS lines; 22 is the oldest still supported.
    expect(Number(major) % 2, `Node ${major} is an LTS line`).toBe(0);
    expect(Number(major)).toBeGreaterThanOrEqual(22);
    const semver = createRequire(import.meta.url)('semver') as {
      satisfies(version: string, range: string): boolean;
      validRange(range: string): string | null;
    };
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { dev?: boolean; devOptional?: boolean; engines?: { node?: string } }>;
    };
    const declared: Array<{ name: string; range: string }> = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (!path.includes('node_modules/') || entry.dev || entry.devOptional) continue;
      // As installed; a platform's optional package missing here (esbuild's for other OSes) as locked.
      const manifest = join(ROOT, path, 'package.json');
      const engines = existsSync(manifest)
        ? (JSON.parse(readFileSync(manifest, 'utf8')) as { engines?: { node?: string } }).engines
        : entry.engines;
      if (typeof engines?.node === 'string') declared.push({ name: path, range: engines.node });
    }
    expect(declared.length, 'production packages declaring engines.node').toBeGreaterThan(20);
    expect(declared.filter((d) => !semver.validRange(d.range))).toEqual([]);
    const unsupported = declared.filter((d) => !semver.satisfies(version, d.range));
    expect(unsupported, `production dependencies that do not support Node ${version}`).toEqual([]);
  });

  it("installs dependencies with the build's optional .npmrc and CA secrets, never baking them in", () => {
    // Every `npm ci` the build runs (a command, not a message that names it).
    const installs = dockerfile
      .split('\n')
      .filter((l) => /^RUN\s/.test(l.trim()) && /(?:^RUN|&&|;|\|\|)\s*npm ci\b/.test(l.trim()));
    expect(installs).toHaveLength(2);
    for (const install of installs) {
      expect(install).toMatch(/--mount=type=secret,id=npmrc,target=\/root\/\.npmrc,required=false\s/);
      expect(install).toMatch(/--mount=type=secret,id=ca,target=(\S+),required=false\s/);
      const caPath = /--mount=type=secret,id=ca,target=([^,\s]+)/.exec(install)![1]!;
      // Extra roots only when a bundle was passed: NODE_EXTRA_CA_CERTS at an absent file warns.
      expect(install).toContain(`if [ -s ${caPath} ]; then export NODE_EXTRA_CA_CERTS=${caPath}; fi`);
    }
    expect(dockerfile).not.toMatch(/^(COPY|ADD)\s.*\.npmrc/im);
    expect(dockerfile).not.toMatch(/^(ARG|ENV)\s.*(NPM_TOKEN|_authToken|NODE_EXTRA_CA_CERTS)/im);
  });
});

/**
 * The npm packages the entry points load at run time: relative imports and workspace packages
 * (`@compactor/x` → its src/index.ts) are followed; type-only imports are skipped.
 */
function runtimeImports(entries: string[]): Set<string> {
  const workspaces = new Map<string, string>();
  for (const dir of ['apps', 'packages']) {
    for (const name of readdirSync(join(ROOT, dir))) {
      const manifest = join(ROOT, dir, name, 'package.json');
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as {
        name: string;
        exports?: Record<string, string>;
      };
      const main = pkg.exports?.['.'];
      if (main) workspaces.set(pkg.name, join(ROOT, dir, name, main));
    }
  }
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    const specifiers = [
      ...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm),
      ...source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
    ].map((m) => m[1]!);
    for (const specifier of specifiers) {
      if (specifier.startsWith('node:') || builtinModules.includes(specifier)) continue;
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier);
        const candidates = [target, `${target}.ts`, join(target, 'index.ts')];
        const found = candidates.find((c) => existsSync(c) && statSync(c).isFile());
        if (found && found.endsWith('.ts')) visit(found);
        continue;
      }
      const name = specifier.startsWith('@')
        ? specifier.split('/').slice(0, 2).join('/')
        : specifier.split('/')[0]!;
      const workspace = workspaces.get(name);
      if (workspace) visit(workspace);
      else packages.add(name);
    }
  };
  for (const entry of entries) visit(join(ROOT, entry));
  return packages;
}
