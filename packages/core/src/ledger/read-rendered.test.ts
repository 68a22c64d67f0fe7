import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expandPathGroup } from './group-paths';
import { pathsInRenderedLedger } from './read-rendered';
import { renderLedger } from './render';
import { emptyLedger, type ArtifactLedger, type LedgerFileKind } from './types';

const KINDS: LedgerFileKind[] = ['modified', 'created', 'deleted', 'read'];

function ledgerOf(paths: readonly string[]): ArtifactLedger {
  return {
    ...emptyLedger(),
    files: paths.map((path, index) => ({
      path,
      kind: KINDS[index % KINDS.length]!,
      firstSeq: 1,
      lastSeq: paths.length - index,
      count: 1,
    })),
    commands: [{ command: 'ls src/a.ts', outcome: 'passed', firstSeq: 1, lastSeq: 1, count: 1 }],
  };
}

const render = (ledger: ArtifactLedger, maxTokens = 1_000_000) =>
  renderLedger(ledger, { maxTokens, count: (text) => text.length });

describe('expandPathGroup', () => {
  it.each([
    ['src/api/{routes.ts, auth.ts}', ['src/api/routes.ts', 'src/api/auth.ts']],
    ['…/x/{a, b, c}', ['…/x/a', '…/x/b', '…/x/c']],
    ['src/api/routes.ts', ['src/api/routes.ts']],
    ['{a, b}', ['{a, b}']],
    ['src/{a}', ['src/{a}']],
  ])('%s', (entry, paths) => {
    expect(expandPathGroup(entry)).toEqual(paths);
  });
});

describe('pathsInRenderedLedger', () => {
  const worktree = '/home/me/.wasa/worktrees/0c1bb6a9d11f/task-141-upgrade-the-tui/';
  const paths = [
    `${worktree}internal/tui/model.go`,
    `${worktree}internal/tui/view.go`,
    `${worktree}go.mod`,
    'src/{odd}, name.ts',
    `${worktree}internal/tui/update.go`,
    '/tmp/notes.txt',
  ];

  it('reads back every path, through the root legend and the groups', () => {
    const text = render(ledgerOf(paths));
    expect(text).toContain('(…/ at the start of a path stands for');
    expect(text).toContain('{');
    expect(
      new Set(pathsInRenderedLedger(`summary words\n<session-ledger>\n${text}\n</session-ledger>`)),
    ).toEqual(new Set(paths));
  });

  it('reads only what is listed when the budget drops some, and no command as a path', () => {
    const full = render(ledgerOf(paths));
    const text = render(ledgerOf(paths), full.length - 40);
    const read = pathsInRenderedLedger(text);
    expect(read.length).toBeGreaterThan(0);
    expect(read.length).toBeLessThan(paths.length);
    for (const path of read) expect(paths).toContain(path);
  });

  it('is the inverse of the rendering for any paths', () => {
    const segment = fc.stringMatching(/^[a-c{},. …]{1,4}$/);
    const path = fc
      .tuple(
        fc.constantFrom('', '/', '…/', '/home/someone/a-long-worktree/'),
        fc.array(segment, { minLength: 1, maxLength: 3 }),
      )
      .map(([lead, parts]) => lead + parts.join('/'));
    fc.assert(
      fc.property(fc.uniqueArray(path, { minLength: 1, maxLength: 12 }), (list) => {
        expect(new Set(pathsInRenderedLedger(render(ledgerOf(list))))).toEqual(new Set(list));
      }),
      { numRuns: 300 },
    );
  });
});
