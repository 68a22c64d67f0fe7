import { describe, expect, it } from 'vitest';
import { groupPaths } from './group-paths';

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
