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
      // go.mod, directly in the shared directory, is named as itself.
      ['internal/tui/', 'internal/store/', 'cmd/app/', 'docs/', 'go.mod'],
      ['internal/', 'cmd/app/', 'docs/', 'go.mod'],
    ]);
  });

  it('covers every file: by a group below the shared directory, or as itself', () => {
    for (const cover of directoryCovers(paths, [root])) {
      const covered = paths.filter((path) =>
        cover.some((entry) => (entry.endsWith('/') ? path.startsWith(entry) : path === entry)),
      );
      expect(covered).toEqual(paths);
      for (const directory of cover.filter((entry) => entry.endsWith('/'))) {
        expect(directory.length).toBeGreaterThan(root.length);
        expect(cover.filter((other) => other !== directory && other.startsWith(directory))).toEqual([]);
      }
    }
  });

  it('never names the shared directory, `/` or `./`', () => {
    expect(directoryCovers(['/a/x.ts', '/b/y.ts'], ['/'])).toEqual([['/a/', '/b/']]);
    expect(directoryCovers(['./a/x.ts', './b/y.ts'], [''])).toEqual([['./a/', './b/']]);
    expect(directoryCovers([`${root}a.ts`, `${root}b.ts`], [root])).toEqual([[`${root}a.ts`, `${root}b.ts`]]);
    expect(directoryCovers(['README.md'], [''])).toEqual([['README.md']]);
    // The shared directory itself, listed as read, is never an entry: it would cover everything.
    expect(directoryCovers([root], [root])).toEqual([]);
  });

  it('names files with no group by themselves only when they are few', () => {
    const flat = ['a.ts', 'b.ts', 'c.ts', 'd.ts', 'src/e.ts'];
    expect(directoryCovers(flat.slice(1), [''])).toEqual([['src/', 'b.ts', 'c.ts', 'd.ts']]);
    expect(directoryCovers(flat, [''])).toEqual([['src/']]);
    expect(directoryCovers(flat.slice(0, 4), [''])).toEqual([]);
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
