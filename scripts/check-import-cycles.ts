/**
 * Import-cycle check, run by `npm test` (`npm run check:cycles`): fails when a workspace's source
 * files import each other in a cycle, when workspaces depend on each other in a cycle (through
 * their package.json or through what their files import, tests included), when a workspace imports
 * another it does not declare, or when a package (`packages/*`) depends on an app (`apps/*`). A file
 * cycle makes module evaluation order matter (an import that is `undefined` at load time, a
 * circular `export *`); a package cycle breaks turbo's `^typecheck` order and any build.
 *
 * Dependency-free: a small lexer masks comments, strings, template literals and regular
 * expressions, then the relative imports (`import … from './x'`, `import './x'`, `import('./x')`,
 * `export … from './x'`) are read from what is left and resolved like the bundler resolution of
 * tsconfig.base.json (`./x` → `x.ts`, `x.tsx`, `x/index.ts`; `./x.js` → `x.ts`). Type-only imports
 * (`import type`, `export type`) count too, unless `--ignore-type-only`: they are erased at run
 * time, but a cycle through them is still two files that cannot be understood one without the
 * other. Package imports (`@compactor/…`) are the package-level check's business: every source
 * file of a workspace (`src`, tests, test support, examples) counts, `@compactor/x/sub` counts as
 * `@compactor/x`, and each must be declared in the workspace's package.json (`dependencies` or
 * `devDependencies`): an undeclared import is a dependency the manifest graph, turbo's build order
 * and the cycle check cannot see. Test-only imports count for cycles too: a package whose tests
 * need a package that needs it cannot be typechecked or tested first.
 *
 * Each cycle is reported once, as a path (`a.ts → b.ts → a.ts`): the shortest one through each
 * group of files that reach each other (a strongly connected component), with the group's size
 * when it holds more files than the path shows.
 *
 *   npx tsx scripts/check-import-cycles.ts [--ignore-type-only]
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { importsOf, relativeImports } from './source-imports';

/** A directed graph: each node's direct dependencies. */
export type Graph = ReadonlyMap<string, readonly string[]>;

export { importsOf, maskSource, relativeImports, type ImportRef } from './source-imports';

const SOURCE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts'];

/**
 * The file `specifier` (relative) imported from `from` names, among `files` (absolute or
 * repository-relative paths, with `/`); `null` when it is none of them (a JSON file, a missing
 * file: not ours to judge).
 */
export function resolveImport(from: string, specifier: string, files: ReadonlySet<string>): string | null {
  const base = path.posix.join(path.posix.dirname(from), specifier);
  const withoutJs = base.replace(/\.(m|c)?js$/, '');
  const candidates = [
    base,
    ...SOURCE_EXTENSIONS.map((ext) => `${withoutJs}${ext}`),
    ...SOURCE_EXTENSIONS.map((ext) => `${base}/index${ext}`),
  ];
  return candidates.find((candidate) => files.has(candidate)) ?? null;
}

// ---------------------------------------------------------------------------------------------
// Cycles
// ---------------------------------------------------------------------------------------------

/** Strongly connected components (Tarjan, iterative), each sorted, in a deterministic order. */
export function stronglyConnectedComponents(graph: Graph): string[][] {
  const nodes = [...new Set([...graph.keys(), ...[...graph.values()].flat()])].sort();
  const sortedEdges = new Map(nodes.map((node) => [node, [...(graph.get(node) ?? [])].sort()]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;

  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; edge: number }> = [{ node: root, edge: 0 }];
    index.set(root, counter);
    low.set(root, counter);
    counter += 1;
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; edge: number };
      const edges = sortedEdges.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const next = edges[frame.edge] as string;
        frame.edge += 1;
        if (!index.has(next)) {
          index.set(next, counter);
          low.set(next, counter);
          counter += 1;
          stack.push(next);
          onStack.add(next);
          work.push({ node: next, edge: 0 });
        } else if (onStack.has(next)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(next) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent)
        low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string | undefined;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component.sort());
      }
    }
  }
  return components.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

/** The shortest path from `start` back to `start` using only nodes of `within` (BFS). */
function shortestCycleThrough(graph: Graph, start: string, within: ReadonlySet<string>): string[] | null {
  const previous = new Map<string, string>();
  const queue: string[] = [start];
  const seen = new Set<string>([start]);
  while (queue.length > 0) {
    const node = queue.shift() as string;
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      if (!within.has(next)) continue;
      if (next === start) {
        const cycle = [start];
        // Walk back from `node` to `start`, prepending: [first, …, node, start].
        for (let at: string | undefined = node; at !== undefined && at !== start; at = previous.get(at)) {
          cycle.unshift(at);
        }
        cycle.unshift(start);
        return cycle; // [start, …, node, start]
      }
      if (!seen.has(next)) {
        seen.add(next);
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return null;
}

/** One cycle of a component, with the component's size (a component may hold more cycles). */
export interface Cycle {
  /** `[a, b, …, a]`: starts and ends at the same node. */
  path: string[];
  /** How many nodes reach each other in the component this cycle belongs to. */
  componentSize: number;
}

/**
 * One cycle per group of nodes that reach each other: the shortest through the group's first
 * node (sorted), so the report is stable. A node importing itself is a cycle of one.
 */
export function findCycles(graph: Graph): Cycle[] {
  const cycles: Cycle[] = [];
  for (const component of stronglyConnectedComponents(graph)) {
    const [first] = component as [string];
    const selfLoop = (graph.get(first) ?? []).includes(first);
    if (component.length === 1 && !selfLoop) continue;
    const within = new Set(component);
    const cyclePath = selfLoop ? [first, first] : shortestCycleThrough(graph, first, within);
    if (cyclePath) cycles.push({ path: cyclePath, componentSize: component.length });
  }
  return cycles;
}

/** `a → b → a`, with the size of the group when the path does not show all of it. */
export function formatCycle(cycle: Cycle): string {
  const shown = cycle.path.length - 1;
  const rest = cycle.componentSize > shown ? ` (one of the cycles among ${cycle.componentSize} files)` : '';
  return `${cycle.path.join(' → ')}${rest}`;
}

// ---------------------------------------------------------------------------------------------
// The repository
// ---------------------------------------------------------------------------------------------

interface Workspace {
  name: string;
  /** Repository-relative directory, with `/`. */
  dir: string;
  dependencies: string[];
}

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** The workspaces of the root package.json (`dir/*` patterns and plain directories). */
export function listWorkspaces(root: string): Workspace[] {
  const patterns = (readJson(path.join(root, 'package.json'))['workspaces'] as string[] | undefined) ?? [];
  const dirs = patterns.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [pattern];
    const parent = pattern.slice(0, -2);
    if (!existsSync(path.join(root, parent))) return [];
    return readdirSync(path.join(root, parent))
      .sort()
      .map((entry) => `${parent}/${entry}`);
  });
  return dirs
    .filter((dir) => existsSync(path.join(root, dir, 'package.json')))
    .map((dir) => {
      const manifest = readJson(path.join(root, dir, 'package.json'));
      const dependencies = [
        'dependencies',
        'devDependencies',
        'peerDependencies',
        'optionalDependencies',
      ].flatMap((key) => Object.keys((manifest[key] as Record<string, string> | undefined) ?? {}));
      return { name: String(manifest['name'] ?? dir), dir, dependencies };
    });
}

function sourceFiles(root: string, dir: string): string[] {
  const absolute = path.join(root, dir);
  if (!existsSync(absolute)) return [];
  const files: string[] = [];
  for (const entry of readdirSync(absolute).sort()) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const relative = `${dir}/${entry}`;
    if (statSync(path.join(root, relative)).isDirectory()) files.push(...sourceFiles(root, relative));
    else if (SOURCE_EXTENSIONS.some((ext) => entry.endsWith(ext)) && !entry.endsWith('.d.ts')) {
      files.push(relative);
    }
  }
  return files;
}

/** Every source file of every workspace (tests, test support and examples included) → content. */
export function workspaceSources(root: string, workspaces: readonly Workspace[]): Map<string, string> {
  return new Map(
    workspaces.flatMap((workspace) =>
      sourceFiles(root, workspace.dir).map(
        (file) => [file, readFileSync(path.join(root, file), 'utf8')] as const,
      ),
    ),
  );
}

/** The file graph of every workspace's `src`: repository-relative paths to the files they import. */
export function fileGraph(
  root: string,
  workspaces: readonly Workspace[],
  options: { ignoreTypeOnly?: boolean } = {},
): Map<string, string[]> {
  const files = workspaces.flatMap((workspace) => sourceFiles(root, `${workspace.dir}/src`));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const imports = relativeImports(readFileSync(path.join(root, file), 'utf8'))
      .filter((ref) => !(options.ignoreTypeOnly && ref.typeOnly))
      .map((ref) => resolveImport(file, ref.specifier, known))
      .filter((target): target is string => target !== null);
    graph.set(file, [...new Set(imports)]);
  }
  return graph;
}

/** Workspace names to the workspaces they depend on (any kind of dependency). */
export function packageGraph(workspaces: readonly Workspace[]): Map<string, string[]> {
  const names = new Set(workspaces.map((workspace) => workspace.name));
  return new Map(
    workspaces.map((workspace) => [
      workspace.name,
      [...new Set(workspace.dependencies.filter((dependency) => names.has(dependency)))],
    ]),
  );
}

/** Per workspace name: each other workspace its files import, with the first file that does. */
export type WorkspaceImports = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** The workspace `specifier` names (`@x/a` or `@x/a/sub` → `@x/a`), or `null` for an outside package. */
export function importedWorkspace(specifier: string, names: readonly string[]): string | null {
  return names.find((name) => specifier === name || specifier.startsWith(`${name}/`)) ?? null;
}

/**
 * The workspaces each workspace's files import, from `sources` (repository-relative path →
 * content). A file belongs to the workspace whose directory holds it; a workspace importing
 * itself by name (an example written as a user would) is no dependency.
 */
export function workspaceImports(
  workspaces: readonly Workspace[],
  sources: ReadonlyMap<string, string>,
): Map<string, Map<string, string>> {
  const names = workspaces.map((workspace) => workspace.name);
  const imports = new Map(workspaces.map((workspace) => [workspace.name, new Map<string, string>()]));
  for (const [file, source] of [...sources].sort(([a], [b]) => a.localeCompare(b))) {
    const owner = workspaces.find((workspace) => file.startsWith(`${workspace.dir}/`));
    if (!owner) continue;
    const found = imports.get(owner.name) as Map<string, string>;
    for (const ref of importsOf(source)) {
      const target = importedWorkspace(ref.specifier, names);
      if (target !== null && target !== owner.name && !found.has(target)) found.set(target, file);
    }
  }
  return imports;
}

/** Workspace names to the workspaces their files import (the graph of what the code really uses). */
export function importGraph(imports: WorkspaceImports): Map<string, string[]> {
  return new Map([...imports].map(([name, targets]) => [name, [...targets.keys()].sort()]));
}

/** One line per workspace imported but not declared in the importer's package.json. */
export function undeclaredImports(workspaces: readonly Workspace[], imports: WorkspaceImports): string[] {
  return workspaces.flatMap((workspace) =>
    [...(imports.get(workspace.name) ?? [])]
      .filter(([target]) => !workspace.dependencies.includes(target))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([target, file]) =>
          `${workspace.name} imports ${target} (${file}) but ${workspace.dir}/package.json does not declare it`,
      ),
  );
}

/**
 * Libraries that lean on an app: a workspace under `packages/` that declares a dependency on one
 * under `apps/`, or whose source (tests and test support included) imports one. Apps compose
 * packages, never the other way: what a package needs from an app belongs in a package. Every
 * source file of the package counts (`src`, tests, examples).
 */
export function packagesOnApps(root: string, workspaces: readonly Workspace[]): string[] {
  const apps = workspaces.filter((workspace) => workspace.dir.startsWith('apps/')).map((app) => app.name);
  const isApp = (specifier: string) =>
    apps.some((app) => specifier === app || specifier.startsWith(`${app}/`));
  return workspaces
    .filter((workspace) => workspace.dir.startsWith('packages/'))
    .flatMap((workspace) => [
      ...workspace.dependencies
        .filter(isApp)
        .map((app) => `${workspace.name} depends on ${app} (package.json)`),
      ...sourceFiles(root, workspace.dir).flatMap((file) =>
        importsOf(readFileSync(path.join(root, file), 'utf8'))
          .filter((ref) => isApp(ref.specifier))
          .map((ref) => `${file} imports ${ref.specifier}`),
      ),
    ]);
}

/** Runs the checks on the repository at `root`; returns the report and whether it is clean. */
export function checkRepository(
  root: string,
  options: { ignoreTypeOnly?: boolean } = {},
): { ok: boolean; report: string } {
  const workspaces = listWorkspaces(root);
  const fileCycles = findCycles(fileGraph(root, workspaces, options));
  const packageCycles = findCycles(packageGraph(workspaces));
  const imports = workspaceImports(workspaces, workspaceSources(root, workspaces));
  const importCycles = findCycles(importGraph(imports));
  const undeclared = undeclaredImports(workspaces, imports);
  const lines: string[] = [];
  const section = (title: string, cycles: Cycle[]): void => {
    if (cycles.length === 0) return;
    lines.push(`${title} (${cycles.length}):`, ...cycles.map((cycle) => `  ${formatCycle(cycle)}`));
  };
  section('Import cycles between source files', fileCycles);
  section('Dependency cycles between workspaces', packageCycles);
  section('Import cycles between workspaces (tests included)', importCycles);
  if (undeclared.length > 0)
    lines.push(
      `Workspace imports not declared in package.json (${undeclared.length}):`,
      ...undeclared.map((line) => `  ${line}`),
    );
  const onApps = packagesOnApps(root, workspaces);
  if (onApps.length > 0)
    lines.push(`Packages that depend on an app (${onApps.length}):`, ...onApps.map((line) => `  ${line}`));
  const ok = [fileCycles, packageCycles, importCycles, undeclared, onApps].every(
    (found) => found.length === 0,
  );
  const checked = `${workspaces.length} workspace${workspaces.length === 1 ? '' : 's'}`;
  return {
    ok,
    report: ok
      ? `No import cycles, every workspace import declared, and no package depends on an app (${checked}).`
      : `${lines.join('\n')}\n\nImport-cycle check failed (${checked}).`,
  };
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const { ok, report } = checkRepository(root, {
    ignoreTypeOnly: process.argv.includes('--ignore-type-only'),
  });
  (ok ? console.log : console.error)(report);
  process.exitCode = ok ? 0 : 1;
}
