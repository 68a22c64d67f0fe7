import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkRepository,
  findCycles,
  formatCycle,
  packageGraph,
  packagesOnApps,
  relativeImports,
  resolveImport,
  stronglyConnectedComponents,
  type Graph,
} from './check-import-cycles';

const graph = (edges: Record<string, string[]>): Graph => new Map(Object.entries(edges));
const paths = (g: Graph): string[][] => findCycles(g).map((cycle) => cycle.path);

describe('findCycles', () => {
  it.each<[string, Record<string, string[]>, string[][]]>([
    ['no edges', { a: [], b: [] }, []],
    ['a chain and a diamond are not cycles', { a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }, []],
    ['a file importing itself', { a: ['a'] }, [['a', 'a']]],
    ['two files importing each other', { a: ['b'], b: ['a'] }, [['a', 'b', 'a']]],
    [
      'a triangle reached from outside: only the triangle',
      { entry: ['x'], x: ['y'], y: ['z'], z: ['x'] },
      [['x', 'y', 'z', 'x']],
    ],
    [
      'two separate cycles, one report each',
      { a: ['b'], b: ['a'], c: ['d'], d: ['e'], e: ['c'], f: ['a', 'c'] },
      [
        ['a', 'b', 'a'],
        ['c', 'd', 'e', 'c'],
      ],
    ],
    [
      'the shortest way back through the first file of a group',
      { a: ['b', 'c'], b: ['c'], c: ['d'], d: ['a', 'b'] },
      [['a', 'c', 'd', 'a']],
    ],
    ['an edge to a node with no entry of its own', { a: ['b'] }, []],
  ])('%s', (_name, edges, expected) => {
    expect(paths(graph(edges))).toEqual(expected);
  });

  it('says when a group holds more files than the cycle shown', () => {
    const cycles = findCycles(graph({ a: ['b', 'c'], b: ['a'], c: ['a'] }));
    expect(cycles).toEqual([{ path: ['a', 'b', 'a'], componentSize: 3 }]);
    expect(formatCycle(cycles[0]!)).toBe('a → b → a (one of the cycles among 3 files)');
    expect(formatCycle({ path: ['a', 'b', 'a'], componentSize: 2 })).toBe('a → b → a');
  });

  it('groups nodes that reach each other, deterministically', () => {
    expect(stronglyConnectedComponents(graph({ b: ['a'], a: ['b', 'c'], c: [] }))).toEqual([
      ['a', 'b'],
      ['c'],
    ]);
  });

  it('handles a long chain without recursion', () => {
    const edges: Record<string, string[]> = {};
    for (let i = 0; i < 20_000; i += 1) edges[`n${i}`] = [`n${i + 1}`];
    edges['n20000'] = ['n0'];
    const [cycle] = findCycles(graph(edges));
    expect(cycle?.componentSize).toBe(20_001);
    expect(cycle?.path).toHaveLength(20_002);
  });
});

describe('relativeImports', () => {
  it('reads every kind of relative import and re-export, and nothing inside text', () => {
    const source = [
      "import { a, type B } from './a';",
      "import type { C } from '../c';",
      'import D, {',
      '  e,',
      "} from './d.js';",
      "import * as ns from './ns';",
      "import './side-effect';",
      "export * from './star';",
      "export * as grouped from './grouped';",
      "export { f } from './f';",
      "export type { G } from './g';",
      "const lazy = () => import('./lazy');",
      "import { pkg } from '@compactor/core';",
      "import { readFileSync } from 'node:fs';",
      "// import { commented } from './commented';",
      "/* export * from './block-commented'; */",
      'const text = "import { quoted } from \'./quoted\';";',
      "const template = `import { inTemplate } from './in-template'; ${import('./in-expression')}`;",
      "const regex = /import x from '.\\/in-regex'/;",
      "const ratio = total / count; import('./after-division');",
      'const url = import.meta.url;',
    ].join('\n');
    expect(relativeImports(source)).toEqual([
      { specifier: './a', typeOnly: false },
      { specifier: '../c', typeOnly: true },
      { specifier: './d.js', typeOnly: false },
      { specifier: './ns', typeOnly: false },
      { specifier: './side-effect', typeOnly: false },
      { specifier: './star', typeOnly: false },
      { specifier: './grouped', typeOnly: false },
      { specifier: './f', typeOnly: false },
      { specifier: './g', typeOnly: true },
      { specifier: './lazy', typeOnly: false },
      { specifier: './in-expression', typeOnly: false },
      { specifier: './after-division', typeOnly: false },
    ]);
  });
});

describe('resolveImport', () => {
  const files = new Set(['p/src/a.ts', 'p/src/dir/index.ts', 'p/src/view.tsx', 'p/src/deep/b.ts']);
  it.each<[string, string, string | null]>([
    ['./a', 'p/src/a.ts', 'p/src/a.ts'],
    ['./a.js', 'p/src/a.ts', 'p/src/a.ts'],
    ['./dir', 'p/src/a.ts', 'p/src/dir/index.ts'],
    ['./view', 'p/src/a.ts', 'p/src/view.tsx'],
    ['../a', 'p/src/deep/b.ts', 'p/src/a.ts'],
    ['./missing', 'p/src/a.ts', null],
    ['./data.json', 'p/src/a.ts', null],
  ])('%s from %s', (specifier, from, expected) => {
    expect(resolveImport(from, specifier, files)).toBe(expected);
  });
});

describe('packageGraph', () => {
  it('links workspaces through any kind of dependency, ignoring outside packages', () => {
    const workspaces = [
      { name: '@x/a', dir: 'packages/a', dependencies: ['@x/b', 'zod'] },
      { name: '@x/b', dir: 'packages/b', dependencies: ['@x/a'] },
      { name: '@x/c', dir: 'apps/c', dependencies: ['@x/a'] },
    ];
    const packages = packageGraph(workspaces);
    expect(packages.get('@x/a')).toEqual(['@x/b']);
    expect(paths(packages)).toEqual([['@x/a', '@x/b', '@x/a']]);
  });
});

describe('packagesOnApps', () => {
  /** A repository of files (path → content) in a temporary directory. */
  function repository(files: Record<string, string>): string {
    const root = mkdtempSync(path.join(tmpdir(), 'cycles-'));
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), content);
    }
    return root;
  }
  const manifest = (name: string, devDependencies: Record<string, string> = {}) =>
    JSON.stringify({ name, devDependencies });

  it('finds a package that declares or imports an app, and not an app that uses a package', () => {
    const root = repository({
      'package.json': JSON.stringify({ workspaces: ['packages/*', 'apps/*'] }),
      'apps/api/package.json': manifest('@x/api', { '@x/lib': '*' }),
      'apps/api/src/main.ts': "import { lib } from '@x/lib';\n",
      'packages/lib/package.json': manifest('@x/lib'),
      'packages/lib/src/lib.test.ts': "import { useApi } from '@x/api/testing';\n",
      'packages/lib/src/probe.test.ts': 'const source = "import { x } from \'@x/api\';";\n',
      'packages/client/package.json': manifest('@x/client', { '@x/api': '*' }),
    });
    try {
      expect(
        packagesOnApps(root, [
          { name: '@x/api', dir: 'apps/api', dependencies: ['@x/lib'] },
          { name: '@x/client', dir: 'packages/client', dependencies: ['@x/api'] },
          { name: '@x/lib', dir: 'packages/lib', dependencies: [] },
        ]),
      ).toEqual([
        '@x/client depends on @x/api (package.json)',
        'packages/lib/src/lib.test.ts imports @x/api/testing',
      ]);
      const { ok, report } = checkRepository(root);
      expect(ok).toBe(false);
      expect(report).toContain('Packages that depend on an app (2):');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
