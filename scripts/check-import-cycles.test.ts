import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkRepository,
  findCycles,
  formatCycle,
  importedWorkspace,
  importGraph,
  packageGraph,
  packagesOnApps,
  relativeImports,
  resolveImport,
  stronglyConnectedComponents,
  undeclaredImports,
  workspaceImports,
  type Graph,
} from './check-import-cycles';

const graph = (edges: Record<string, string[]>): Graph => new Map(Object.entries(edges));
const paths = (g: Graph): string[][] => findCycles(g).map((cycle) => cycle.path);

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

describe('workspace imports', () => {
  const workspaces = [
    { name: '@x/db', dir: 'packages/db', dependencies: ['@x/core'] },
    { name: '@x/db-tools', dir: 'packages/db-tools', dependencies: [] },
    { name: '@x/testing', dir: 'packages/testing', dependencies: ['@x/db'] },
    { name: '@x/core', dir: 'packages/core', dependencies: [] },
  ];
  const sources = new Map(
    Object.entries({
      'packages/db/src/index.ts': "import { plan } from '@x/core';\nimport { Pool } from 'pg';\n",
      'packages/db/src/b.test.ts': "import { useDb } from '@x/testing';\n",
      'packages/db/src/a.test.ts': "import type { Fixture } from '@x/testing/fixtures';\n",
      'packages/db/examples/self.ts': "import { query } from '@x/db';\n",
      'packages/db-tools/src/tool.ts': "export { query } from '@x/db/sql';\n",
      'packages/testing/src/database.ts': "const lazy = () => import('@x/db');\n",
      'packages/core/src/probe.test.ts': 'const text = "import { a } from \'@x/db\';";\n',
      'scripts/outside.ts': "import { useDb } from '@x/testing';\n",
    }),
  );
  const imports = workspaceImports(workspaces, sources);

  it.each<[string, string | null]>([
    ['@x/db', '@x/db'],
    ['@x/db/sql', '@x/db'],
    ['@x/db-tools', '@x/db-tools'],
    ['@x/dbx', null],
    ['pg', null],
    ['./db', null],
  ])('%s names workspace %s', (specifier, expected) => {
    expect(importedWorkspace(specifier, ['@x/db', '@x/db-tools'])).toBe(expected);
  });

  it('finds what each workspace imports, sub-paths and tests included, with the first file', () => {
    expect(
      Object.fromEntries([...imports].map(([name, found]) => [name, Object.fromEntries(found)])),
    ).toEqual({
      '@x/db': { '@x/core': 'packages/db/src/index.ts', '@x/testing': 'packages/db/src/a.test.ts' },
      '@x/db-tools': { '@x/db': 'packages/db-tools/src/tool.ts' },
      '@x/testing': { '@x/db': 'packages/testing/src/database.ts' },
      '@x/core': {},
    });
  });

  it('reports each import the importer does not declare', () => {
    expect(undeclaredImports(workspaces, imports)).toEqual([
      '@x/db imports @x/testing (packages/db/src/a.test.ts) but packages/db/package.json does not declare it',
      '@x/db-tools imports @x/db (packages/db-tools/src/tool.ts) but packages/db-tools/package.json does not declare it',
    ]);
  });

  it('sees the cycle a test-only import closes, which the manifests alone do not', () => {
    expect(paths(packageGraph(workspaces))).toEqual([]);
    expect(paths(importGraph(imports))).toEqual([['@x/db', '@x/testing', '@x/db']]);
  });
});

describe('checkRepository', () => {
  it('fails on a cycle closed by an undeclared test import, and passes once it is gone', () => {
    const root = repository({
      'package.json': JSON.stringify({ workspaces: ['packages/*'] }),
      'packages/db/package.json': manifest('@x/db'),
      'packages/db/src/index.ts': 'export const db = 1;\n',
      'packages/db/src/db.test.ts': "import { useDb } from '@x/testing';\n",
      'packages/testing/package.json': JSON.stringify({ name: '@x/testing', dependencies: { '@x/db': '*' } }),
      'packages/testing/src/index.ts': "import { db } from '@x/db';\nexport const useDb = () => db;\n",
    });
    try {
      expect(checkRepository(root)).toEqual({
        ok: false,
        report: [
          'Import cycles between workspaces (tests included) (1):',
          '  @x/db → @x/testing → @x/db',
          'Workspace imports not declared in package.json (1):',
          '  @x/db imports @x/testing (packages/db/src/db.test.ts) but packages/db/package.json does not declare it',
          '',
          'Import-cycle check failed (2 workspaces).',
        ].join('\n'),
      });
      writeFileSync(path.join(root, 'packages/db/src/db.test.ts'), "import { db } from './index';\n");
      expect(checkRepository(root)).toEqual({
        ok: true,
        report:
          'No import cycles, every workspace import declared, and no package depends on an app (2 workspaces).',
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
