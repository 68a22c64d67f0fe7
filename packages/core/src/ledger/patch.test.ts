import { describe, expect, it } from 'vitest';
import { fileOpsInPatchBody, type LedgerFileOp } from './patch';

describe('fileOpsInPatchBody', () => {
  const cases: { name: string; body: string; expected: LedgerFileOp[] }[] = [
    {
      name: 'Codex patch: add, update, move, delete',
      body: [
        '*** Begin Patch',
        '*** Add File: src/new.ts',
        '+export const x = 1;',
        '*** Update File: src/old.ts',
        '*** Move to: src/renamed.ts',
        '@@',
        '-a',
        '+b',
        '*** Update File: README.md',
        '@@',
        '*** Delete File: src/gone.ts',
        '*** End Patch',
      ].join('\n'),
      expected: [
        { kind: 'created', path: 'src/new.ts' },
        { kind: 'deleted', path: 'src/old.ts' },
        { kind: 'created', path: 'src/renamed.ts' },
        { kind: 'modified', path: 'README.md' },
        { kind: 'deleted', path: 'src/gone.ts' },
      ],
    },
    {
      name: 'git diff: modified, created, deleted, renamed',
      body: [
        'diff --git a/src/a.ts b/src/a.ts',
        'index 1..2 100644',
        '--- a/src/a.ts',
        '+++ b/src/a.ts',
        '@@ -1 +1 @@',
        '-old',
        '+new',
        'diff --git a/src/n.ts b/src/n.ts',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/src/n.ts',
        '@@ -0,0 +1 @@',
        '+x',
        '--- a/src/d.ts',
        '+++ /dev/null',
        '--- a/src/from.ts',
        '+++ b/src/to.ts',
      ].join('\n'),
      expected: [
        { kind: 'modified', path: 'src/a.ts' },
        { kind: 'created', path: 'src/n.ts' },
        { kind: 'deleted', path: 'src/d.ts' },
        { kind: 'deleted', path: 'src/from.ts' },
        { kind: 'created', path: 'src/to.ts' },
      ],
    },
    {
      name: 'plain diff -u with timestamps',
      body: '--- lib/x.py\t2024-01-01 10:00:00\n+++ lib/x.py\t2024-01-02 10:00:00\n@@ -1 +1 @@\n-a\n+b',
      expected: [{ kind: 'modified', path: 'lib/x.py' }],
    },
    {
      name: 'a removed line that starts with "--" is not a header',
      body: '@@\n--- a comment\n context',
      expected: [],
    },
    { name: 'prose', body: 'I will update the parser and add tests.', expected: [] },
  ];
  it.each(cases)('$name', ({ body, expected }) => {
    expect(fileOpsInPatchBody(body)).toEqual(expected);
  });
});
