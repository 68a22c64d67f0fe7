/**
 * Another commit's packages beside this checkout's, to measure both in the same run: the
 * commit's sources exported (`git archive`) to a directory of its own, with this checkout's
 * benchmark files for the workflow copied in (what is measured is the commit's packages, how it
 * is measured is today's) and a `node_modules` that links every dependency to this checkout's
 * except `@compactor/*`, which resolve to the exported packages.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readlinkSync, renameSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** The directory holding `ref`'s tree, ready to run (made once per commit, then reused). */
export function baselineTree(ref: string): { dir: string; commit: string } {
  const commit = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: root })
    .toString()
    .trim();
  const dir = join(tmpdir(), `compactor-baseline-${commit.slice(0, 12)}`);
  if (!existsSync(dir)) {
    // Made beside it, then renamed: a run cut off halfway leaves no tree that looks ready.
    const making = `${dir}.${process.pid}`;
    mkdirSync(making, { recursive: true });
    const archive = execFileSync(
      'git',
      ['archive', commit, 'packages', 'apps', 'bench', 'package.json', 'tsconfig.json', 'tsconfig.base.json'],
      { cwd: root, maxBuffer: 1 << 30 },
    );
    execFileSync('tar', ['-x', '-C', making], { input: archive });
    linkModules(making);
    renameSync(making, dir);
  }
  cpSync(join(root, 'bench/workflow'), join(dir, 'bench/workflow'), { recursive: true });
  return { dir, commit };
}

/**
 * `making`'s node_modules: this checkout's dependencies linked, and `@compactor/*` linked to the
 * tree's own packages (relative links, as npm makes them, so they hold once `making` is `dir`).
 */
function linkModules(making: string): void {
  const modules = join(making, 'node_modules');
  mkdirSync(join(modules, '@compactor'), { recursive: true });
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry === '@compactor') continue;
    symlinkSync(join(root, 'node_modules', entry), join(modules, entry));
  }
  // Each workspace link (`../../packages/db`) made again inside the tree, to the tree's copy.
  for (const entry of readdirSync(join(root, 'node_modules/@compactor'))) {
    const target = readlinkSync(join(root, 'node_modules/@compactor', entry));
    symlinkSync(target, join(modules, '@compactor', entry));
  }
}
