import { describe, expect, it } from 'vitest';
import type { LedgerFileOp } from './patch';
import { fileOpsOfShellCommand } from './shell-files';
import { simpleCommands } from './shell-words';

describe('fileOpsOfShellCommand: commands that obviously touch files', () => {
  const cases: { command: string; expected: LedgerFileOp[] }[] = [
    { command: 'rm x.txt', expected: [{ kind: 'deleted', path: 'x.txt' }] },
    {
      command: 'rm -rf build dist/out.js',
      expected: [
        { kind: 'deleted', path: 'build' },
        { kind: 'deleted', path: 'dist/out.js' },
      ],
    },
    { command: 'rm -f -- -weird', expected: [{ kind: 'deleted', path: '-weird' }] },
    { command: 'rm *.log $TMP/x', expected: [] },
    {
      command: 'mv src/a.ts src/b.ts',
      expected: [
        { kind: 'deleted', path: 'src/a.ts' },
        { kind: 'created', path: 'src/b.ts' },
      ],
    },
    { command: 'mv a b c dir/', expected: [] },
    {
      command: 'cp -r template.env .env',
      expected: [
        { kind: 'read', path: 'template.env' },
        { kind: 'created', path: '.env' },
      ],
    },
    {
      command: 'touch a.txt "with space.md"',
      expected: [
        { kind: 'created', path: 'a.txt' },
        { kind: 'created', path: 'with space.md' },
      ],
    },
    { command: "sed -i 's/foo/bar/g' src/x.py", expected: [{ kind: 'modified', path: 'src/x.py' }] },
    {
      command: "sed -i.bak -e 's/a/b/' f1 f2",
      expected: [
        { kind: 'modified', path: 'f1' },
        { kind: 'modified', path: 'f2' },
      ],
    },
    { command: "sed -n '1,40p' src/x.py", expected: [] },
    { command: 'echo hi > out.txt 2>&1', expected: [{ kind: 'modified', path: 'out.txt' }] },
    { command: 'npm test >> log.txt 2>/dev/null', expected: [{ kind: 'modified', path: 'log.txt' }] },
    { command: 'make 2>&1 | tee build.log', expected: [{ kind: 'modified', path: 'build.log' }] },
    { command: 'cat README.md | head -n 5', expected: [{ kind: 'read', path: 'README.md' }] },
    { command: 'tail -n 20 app.log', expected: [{ kind: 'read', path: 'app.log' }] },
    {
      command: 'cd /repo && git rm old.ts && git mv a.ts b.ts',
      expected: [
        { kind: 'deleted', path: 'old.ts' },
        { kind: 'deleted', path: 'a.ts' },
        { kind: 'created', path: 'b.ts' },
      ],
    },
    { command: 'sudo rm /etc/x.conf', expected: [{ kind: 'deleted', path: '/etc/x.conf' }] },
    {
      command: "cat > notes.md <<'EOF'\nrm not-a-command.txt\nEOF\nrm real.txt",
      expected: [
        { kind: 'modified', path: 'notes.md' },
        { kind: 'deleted', path: 'real.txt' },
      ],
    },
    {
      command: 'cat <<A > a.txt\nrm x\nA\ncat <<-"B" > b.txt\nrm y\n  B\nrm z',
      expected: [
        { kind: 'modified', path: 'a.txt' },
        { kind: 'modified', path: 'b.txt' },
        { kind: 'deleted', path: 'z' },
      ],
    },
    { command: 'cat <<EOF > c.txt\nrm never-closed', expected: [{ kind: 'modified', path: 'c.txt' }] },
    {
      command: "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: src/new.ts\n+x\n*** End Patch\nEOF",
      expected: [{ kind: 'created', path: 'src/new.ts' }],
    },
    { command: 'ls -la && git status && grep -rn rm src', expected: [] },
    { command: 'curl -o page.html https://example.com', expected: [] },
    { command: 'echo "rm x" ; echo done', expected: [] },
  ];
  it.each(cases)('$command', ({ command, expected }) => {
    expect(fileOpsOfShellCommand(command)).toEqual(expected);
  });
});

describe('simpleCommands', () => {
  it('splits on operators and keeps quoted operators inside words', () => {
    expect(simpleCommands('a "x && y" && b | c; d || e & f')).toEqual(
      ['a', 'b', 'c', 'd', 'e', 'f'].map((name, index) => ({
        words: index === 0 ? ['a', 'x && y'] : [name],
        writesTo: [],
      })),
    );
  });

  it('takes redirection targets apart from the words, and ignores fd duplication', () => {
    expect(simpleCommands('go test ./... 2>&1 >out.txt')).toEqual([
      { words: ['go', 'test', './...'], writesTo: ['out.txt'] },
    ]);
  });
});
