import { describe, expect, it } from 'vitest';
import { groupPaths, sharedRoot, underRoot } from './group-paths';

describe('groupPaths', () => {
  const cases: { name: string; paths: string[]; expected: string[] }[] = [
    {
      name: 'siblings share their directory, in the order given',
      paths: ['src/api/routes.ts', 'src/api/auth.ts'],
      expected: ['src/api/{routes.ts, auth.ts}'],
    },
    {
      name: 'a group stands where its newest path stood',
      paths: ['src/api/routes.ts', 'README.md', 'src/api/auth.ts', 'lib/x.py'],
      expected: ['src/api/{routes.ts, auth.ts}', 'README.md', 'lib/x.py'],
    },
    {
      name: 'nested directories are groups of their own',
      paths: ['src/a.ts', 'src/api/b.ts', 'src/c.ts'],
      expected: ['src/{a.ts, c.ts}', 'src/api/b.ts'],
    },
    {
      name: 'bare names and directories are never grouped',
      paths: ['a.ts', 'b.ts', 'src/'],
      expected: ['a.ts', 'b.ts', 'src/'],
    },
    {
      name: 'absolute paths',
      paths: ['/etc/a.conf', '/etc/b.conf', '/x'],
      expected: ['/etc/{a.conf, b.conf}', '/x'],
    },
    { name: 'nothing', paths: [], expected: [] },
  ];
  it.each(cases)('$name', ({ paths, expected }) => {
    expect(groupPaths(paths)).toEqual(expected);
  });
});

describe('sharedRoot', () => {
  const worktree = '/home/me/.wasa/worktrees/0c1b/task-141-upgrade/';
  const cases: { name: string; paths: string[]; expected: string | null }[] = [
    {
      name: 'the deepest directory most paths share',
      paths: [
        `${worktree}internal/tui/a.go`,
        `${worktree}internal/tui/b.go`,
        `${worktree}internal/record/c.go`,
        '/tmp/x',
      ],
      expected: `${worktree}internal/`,
    },
    {
      name: 'a deeper directory when it saves more',
      paths: [
        ...['a', 'b', 'c', 'd', 'e'].map((name) => `${worktree}internal/tui/${name}.go`),
        `${worktree}go.mod`,
      ],
      expected: `${worktree}internal/tui/`,
    },
    {
      name: 'short prefixes are not worth a legend',
      paths: ['src/api/a.ts', 'src/api/b.ts', 'src/api/c.ts'],
      expected: null,
    },
    { name: 'one path under a root saves nothing', paths: [`${worktree}a.go`, '/etc/x'], expected: null },
    { name: 'nothing', paths: [], expected: null },
  ];
  it.each(cases)('$name', ({ paths, expected }) => {
    expect(sharedRoot(paths)).toBe(expected);
  });

  it('underRoot writes the root as …/ and leaves other paths alone', () => {
    expect(underRoot(`${worktree}a.go`, worktree)).toBe('…/a.go');
    expect(underRoot('/etc/x', worktree)).toBe('/etc/x');
    expect(underRoot(worktree, worktree)).toBe(worktree);
    expect(underRoot('/etc/x', null)).toBe('/etc/x');
  });
});
