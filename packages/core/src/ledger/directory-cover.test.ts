import { describe, expect, it } from 'vitest';
import { commonDirectory, directoryCovers, directoryOf, sharedDirectories } from './directory-cover';

describe('directoryOf and commonDirectory', () => {
  it.each([
    ['src/api/a.ts', 'src/api/'],
    ['README.md', ''],
    ['/etc/hosts', '/etc/'],
    ['src/', 'src/'],
  ])('%s is in %s', (path, directory) => expect(directoryOf(path)).toBe(directory));

  it.each<[string[], string]>([
    [['/w/t/src/a.ts', '/w/t/src/api/b.ts', '/w/t/test/c.ts'], '/w/t/'],
    [['/w/t/src/a.ts', '/w/t/src/b.ts'], '/w/t/src/'],
    [['src/a.ts', 'README.md'], ''],
    [['/w/a.ts', 'src/b.ts'], ''],
    [['/w/src/a.ts', '/w/srcx/b.ts'], '/w/'],
    [[], ''],
  ])('%j share %s', (paths, shared) => expect(commonDirectory(paths)).toBe(shared));
});

describe('directoryCovers', () => {
  const root = '/home/me/wt/task-1/';
  const paths = [
    `${root}internal/tui/model.go`,
    `${root}internal/tui/view.go`,
    `${root}internal/store/db.go`,
    `${root}cmd/app/main.go`,
    `${root}internal/store/sql/q.sql`,
    `${root}go.mod`,
    `${root}docs/a.md`,
  ];

  it('goes from each file’s own directory to fewer, merging the deepest first, newest first', () => {
    expect(directoryCovers(paths, [root]).map((cover) => cover.map((d) => d.slice(root.length)))).toEqual([
      ['internal/tui/', 'internal/store/', 'cmd/app/', 'docs/'],
      ['internal/', 'cmd/app/', 'docs/'],
    ]);
  });

  it('covers every file that has a group below the shared directory, and only those', () => {
    for (const cover of directoryCovers(paths, [root])) {
      const covered = paths.filter((path) => cover.some((directory) => path.startsWith(directory)));
      expect(covered).toEqual(paths.filter((path) => path !== `${root}go.mod`));
      for (const directory of cover) {
        expect(directory.length).toBeGreaterThan(root.length);
        expect(cover.filter((other) => other !== directory && other.startsWith(directory))).toEqual([]);
      }
    }
  });

  it('never names the shared directory, `/` or `./`', () => {
    expect(directoryCovers(['/a/x.ts', '/b/y.ts'], ['/'])).toEqual([['/a/', '/b/']]);
    expect(directoryCovers(['./a/x.ts', './b/y.ts'], [''])).toEqual([['./a/', './b/']]);
    expect(directoryCovers([`${root}a.ts`, `${root}b.ts`], [root])).toEqual([]);
    expect(directoryCovers(['README.md'], [''])).toEqual([]);
  });

  it('keeps absolute and relative paths apart: each kind has its own shared directory', () => {
    const mixed = [
      `${root}src/a.ts`,
      `${root}test/b.ts`,
      'node_modules/x/index.js',
      'node_modules/y/index.js',
    ];
    const shared = sharedDirectories(mixed);
    expect(shared).toEqual([root, 'node_modules/']);
    expect(directoryCovers(mixed, shared).at(-1)).toEqual([
      `${root}src/`,
      `${root}test/`,
      'node_modules/x/',
      'node_modules/y/',
    ]);
    expect(sharedDirectories(['/tmp/a', '/home/b'])).toEqual(['/']);
  });

  it('puts an outer directory where its newest file stood', () => {
    expect(directoryCovers(['src/api/a.ts', 'test/b.ts', 'src/c.ts'], [''])[0]).toEqual(['src/', 'test/']);
  });

  it('stays quick for a thousand directories', () => {
    const many = Array.from({ length: 1000 }, (_, i) => `${root}pkg${i % 40}/sub${i}/file.ts`);
    const covers = directoryCovers(many, [root]);
    expect(covers[0]).toHaveLength(1000);
    expect(covers.at(-1)).toHaveLength(40);
  });
});
