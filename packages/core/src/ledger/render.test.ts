import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { adversarialText, bracketLines } from '../test-support/adversarial-text';
import { openErrorsOf } from './merge';
import { directoriesInRenderedLedger, pathsInRenderedLedger } from './read-rendered';
import { DIRECTORY_SECTION_TITLE, LEDGER_OVERFLOW_LEAD, ledgerOverflowLine, renderLedger } from './render';
import type { ArtifactLedger, LedgerCommand, LedgerFact, LedgerFile, LedgerFileKind } from './types';

const file = (path: string, kind: LedgerFileKind, lastSeq: number): LedgerFile => ({
  path,
  kind,
  firstSeq: 1,
  lastSeq,
  count: 1,
});
const command = (text: string, lastSeq: number, extra: Partial<LedgerCommand> = {}): LedgerCommand => ({
  command: text,
  outcome: 'unknown',
  firstSeq: 1,
  lastSeq,
  count: 1,
  ...extra,
});
const fact = (text: string, lastSeq: number): LedgerFact => ({
  kind: 'identifier',
  text,
  firstSeq: lastSeq,
  lastSeq,
  count: 1,
});

function ledger(
  files: LedgerFile[],
  commands: LedgerCommand[] = [],
  facts: LedgerFact[] = [],
): ArtifactLedger {
  const byRecency = <T extends { lastSeq: number }>(list: T[]): T[] =>
    [...list].sort((a, b) => b.lastSeq - a.lastSeq);
  const sortedCommands = byRecency(commands);
  return {
    version: 1,
    throughSeq: 100,
    files: byRecency(files),
    commands: sortedCommands,
    facts: byRecency(facts),
    openErrors: openErrorsOf(sortedCommands),
  };
}

const chars = (text: string): number => text.length;
const quarterChars = (text: string): number => Math.ceil(text.length / 4);
const words = (text: string): number => text.split(/\s+/).filter(Boolean).length;

const SAMPLE = ledger(
  [
    file('src/api/routes.ts', 'modified', 9),
    file('README.md', 'read', 8),
    file('src/api/auth.ts', 'modified', 7),
    file('src/api/new.ts', 'created', 6),
    file('old/legacy.ts', 'deleted', 5),
    file('src/db/query.ts', 'read', 4),
    file('src/db/pool.ts', 'read', 3),
  ],
  [
    command('npm test', 9, {
      outcome: 'failed',
      exitCode: 1,
      evidence: 'Tests: 2 failed',
      runner: 'npm test',
      count: 3,
    }),
    command('npx tsc --noEmit', 8, { outcome: 'passed', exitCode: 0 }),
    command('git status', 2),
  ],
  [fact('node 20', 5), fact('parseDate', 4)],
);

describe('renderLedger', () => {
  it('puts changed files first, then open errors, read files last, newest first, grouped by directory', () => {
    expect(renderLedger(SAMPLE, { maxTokens: 10_000, count: chars })).toBe(
      [
        'What this session touched (newest first):',
        'Files modified:',
        '- src/api/{routes.ts, auth.ts}',
        'Files created:',
        '- src/api/new.ts',
        'Files deleted:',
        '- old/legacy.ts',
        'Open errors (failed, not passed since):',
        '- npm test — Tests: 2 failed',
        'Commands run:',
        '- npx tsc --noEmit — passed, exit code 0',
        '- git status',
        'Stated by the user:',
        '- node 20',
        '- parseDate',
        'Files read:',
        '- README.md',
        '- src/db/{query.ts, pool.ts}',
      ].join('\n'),
    );
  });

  it('names what does not fit by count with the recall call that lists it', () => {
    const text = renderLedger(SAMPLE, { maxTokens: 300, count: chars });
    expect(text).toBe(
      [
        'What this session touched (newest first):',
        'Files modified:',
        '- src/api/{routes.ts, auth.ts}',
        'Files created:',
        '- src/api/new.ts',
        'Files deleted:',
        '- old/legacy.ts',
        // The open error and the commands did not fit; the facts, shorter, did.
        'Stated by the user:',
        '- node 20',
        '- parseDate',
        `${LEDGER_OVERFLOW_LEAD} 3 files (recall?kind=files), 3 commands (recall?kind=commands).`,
      ].join('\n'),
    );
    expect(text.length).toBeLessThanOrEqual(300);
  });

  it('lets a short later section in when a long earlier one stops fitting', () => {
    const many = ledger(
      Array.from({ length: 50 }, (_, index) =>
        file(`dir${index}/a-rather-long-file-name-${index}.ts`, 'modified', 100 + index),
      ),
      [command('ls', 1)],
    );
    const text = renderLedger(many, { maxTokens: 400, count: chars });
    expect(text).toContain('Commands run:\n- ls');
    expect(text).toMatch(/: \d+ files \(recall\?kind=files\)\.$/);
    expect(text.length).toBeLessThanOrEqual(400);
  });

  it.each([
    ['characters', chars],
    ['a quarter of the characters', quarterChars],
    ['words', words],
  ] as const)('never exceeds its budget, counted in %s, and lists everything once it fits', (_, count) => {
    const full = count(renderLedger(SAMPLE, { maxTokens: 1_000_000, count }));
    for (let maxTokens = 0; maxTokens < full; maxTokens += 1) {
      const text = renderLedger(SAMPLE, { maxTokens, count });
      expect(count(text)).toBeLessThanOrEqual(maxTokens);
      // Whatever is left out is named: an entry listed or counted, never lost.
      if (text !== '') expect(text).toContain(LEDGER_OVERFLOW_LEAD);
    }
    expect(renderLedger(SAMPLE, { maxTokens: full, count })).not.toContain(LEDGER_OVERFLOW_LEAD);
  });

  it('never renders more entries than the budget has tokens, however large the ledger', () => {
    const huge = ledger(
      Array.from({ length: 50_000 }, (_, index) =>
        file(`src/m${index % 100}/file-${index}.ts`, 'read', index),
      ),
    );
    let largestTrial = 0;
    const text = renderLedger(huge, {
      maxTokens: 300,
      count: (rendered) => {
        largestTrial = Math.max(largestTrial, rendered.split('file-').length - 1);
        return quarterChars(rendered);
      },
    });
    expect(largestTrial).toBeLessThanOrEqual(300);
    expect(quarterChars(text)).toBeLessThanOrEqual(300);
    expect(text).toMatch(/: 49,\d{3} files \(recall\?kind=files\)\.$/);
  });

  it('is empty for an empty ledger and when not even the overflow line fits', () => {
    expect(renderLedger(ledger([]), { maxTokens: 1_000, count: chars })).toBe('');
    expect(renderLedger(SAMPLE, { maxTokens: 10, count: chars })).toBe('');
  });

  it('writes a long shared root once, in a legend, and the paths under it after …/', () => {
    const root = '/home/me/.wasa/worktrees/0c1bb6a9d11f/task-141-upgrade-the-tui/';
    const text = renderLedger(
      ledger([
        file(`${root}internal/tui/app.go`, 'modified', 5),
        file(`${root}internal/tui/theme.go`, 'modified', 4),
        file('/tmp/notes.md', 'created', 3),
        file(`${root}go.mod`, 'read', 2),
        file('README.md', 'read', 1),
      ]),
      { maxTokens: 10_000, count: chars },
    );
    expect(text).toBe(
      [
        'What this session touched (newest first):',
        `(…/ at the start of a path stands for ${root})`,
        'Files modified:',
        '- …/internal/tui/{app.go, theme.go}',
        'Files created:',
        '- /tmp/notes.md',
        'Files read:',
        '- …/go.mod',
        '- README.md',
      ].join('\n'),
    );
  });

  it('keeps paths whole, and cuts long commands to one line', () => {
    const longPath = `/home/user/${'deep/'.repeat(60)}file.ts`;
    const text = renderLedger(
      ledger([file(longPath, 'modified', 2)], [command(`echo ${'x'.repeat(500)}\necho done`, 1)]),
      {
        maxTokens: 10_000,
        count: chars,
      },
    );
    expect(text).toContain(longPath);
    expect(text).toMatch(/^- echo x+…$/m);
  });

  it('embeds paths, commands and facts as data: no hostile content becomes a structure line or a framing tag', () => {
    fc.assert(
      fc.property(adversarialText(), adversarialText(), adversarialText(), (path, text, said) => {
        const hostile = ledger(
          [
            file(path, 'modified', 3),
            file(`src/${path}`, 'read', 2),
            // Two paths under one long hostile directory: it becomes the legend's root.
            file(`/home/${said}/0123456789abcdef0123456789abcdef0123456789abcdef/${path}a.ts`, 'created', 2),
            file(`/home/${said}/0123456789abcdef0123456789abcdef0123456789abcdef/${path}b.ts`, 'created', 2),
          ],
          [command(text, 2, { outcome: 'failed', evidence: said })],
          [fact(said, 1)],
        );
        const rendered = renderLedger(hostile, { maxTokens: 1_000_000, count: chars });
        expect(bracketLines(rendered)).toEqual([]);
        expect(rendered).toContain('(…/ at the start of a path stands for /home/');
        expect(rendered).not.toMatch(/(?<!\\)<\s*\/?\s*(?:conversation|summary|modified[-_\s]*files)/i);
      }),
      { numRuns: 300 },
    );
  });
});

describe('ledgerOverflowLine', () => {
  it('is the exact wording, singular and plural, in files / commands / facts order', () => {
    expect(ledgerOverflowLine({ facts: 1, files: 1_234, commands: 2 })).toBe(
      'Not listed for space: 1,234 files (recall?kind=files), 2 commands (recall?kind=commands), 1 fact (recall?kind=facts).',
    );
    expect(ledgerOverflowLine({ commands: 1 })).toBe(
      'Not listed for space: 1 command (recall?kind=commands).',
    );
    expect(ledgerOverflowLine({ files: 0 })).toBe('');
  });
});

describe('renderLedger: the directories of the files it has no room to list', () => {
  const root = '/home/me/.wasa/worktrees/0c1bb6a9d11f/task-143-the-parser/';
  const directories = [
    'internal/parser/',
    'internal/parser/dates/',
    'internal/store/',
    'cmd/app/',
    'docs/',
    'test/',
  ];
  const files = [
    file(`${root}internal/parser/parse.go`, 'modified', 500),
    file(`${root}go.mod`, 'read', 499),
    ...Array.from({ length: 90 }, (_, index) =>
      file(`${root}${directories[index % directories.length]!}file-${index}.go`, 'read', 400 - index),
    ),
  ];
  const big = ledger(files, [command('go test ./...', 450, { outcome: 'passed' })]);
  const named = (text: string) => {
    const paths = new Set(pathsInRenderedLedger(text));
    const under = directoriesInRenderedLedger(text);
    return files.filter(
      (entry) => paths.has(entry.path) || under.some((directory) => entry.path.startsWith(directory)),
    ).length;
  };

  // The whole block takes 345.
  it.each([120, 160, 200, 250, 300, 340])(
    'within %i tokens: every file is listed or under a named directory',
    (maxTokens) => {
      const text = renderLedger(big, { maxTokens, count: quarterChars });
      expect(quarterChars(text)).toBeLessThanOrEqual(maxTokens);
      expect(text).toContain(DIRECTORY_SECTION_TITLE);
      expect(text).toContain(`${LEDGER_OVERFLOW_LEAD} `);
      // go.mod sits in the directory every file shares: it has no group, and is named as itself.
      expect(pathsInRenderedLedger(text)).toContain(`${root}go.mod`);
      expect(named(text)).toBe(files.length);
      for (const directory of directoriesInRenderedLedger(text)) {
        expect(directory.startsWith(root) && directory.length > root.length).toBe(true);
      }
    },
  );

  it('writes them under the legend, in the order of their newest file left out, and lists more as the budget grows', () => {
    const small = renderLedger(big, { maxTokens: 120, count: quarterChars });
    expect(small).toMatch(
      new RegExp(`${DIRECTORY_SECTION_TITLE}\\n(- …/[a-z/]+/\\n)+${LEDGER_OVERFLOW_LEAD}`),
    );
    const listed = pathsInRenderedLedger(small);
    const newestLeftOut = big.files.find(
      (entry) => !listed.includes(entry.path) && !entry.path.endsWith('go.mod'),
    );
    expect(newestLeftOut!.path.startsWith(directoriesInRenderedLedger(small)[0]!)).toBe(true);
    const large = renderLedger(big, { maxTokens: 300, count: quarterChars });
    expect(pathsInRenderedLedger(large).length).toBeGreaterThan(pathsInRenderedLedger(small).length);
  });

  it('names no directory when every file is listed, or when none fits', () => {
    expect(renderLedger(big, { maxTokens: 100_000, count: quarterChars })).not.toContain(
      DIRECTORY_SECTION_TITLE,
    );
    const tight = renderLedger(big, { maxTokens: 30, count: quarterChars });
    expect(quarterChars(tight)).toBeLessThanOrEqual(30);
    expect(tight).not.toContain(DIRECTORY_SECTION_TITLE);
  });
});

describe('renderLedger: commands give way to the directories when nothing else makes room', () => {
  const root = '/home/me/app/';
  const reads = Array.from({ length: 40 }, (_, index) =>
    file(`${root}${['src/api/', 'src/db/', 'test/'][index % 3]!}file-${index}.ts`, 'read', 100 - index),
  );
  const commands = Array.from({ length: 30 }, (_, index) =>
    command(`cd ${root} && npm run test -- --reporter=verbose src/case-${index}.test.ts`, 200 - index),
  );
  const busy = ledger(reads, commands);

  it.each([150, 250, 400])('within %i tokens: every read file is under a named directory', (maxTokens) => {
    const text = renderLedger(busy, { maxTokens, count: quarterChars });
    expect(quarterChars(text)).toBeLessThanOrEqual(maxTokens);
    const under = directoriesInRenderedLedger(text);
    const listed = new Set(pathsInRenderedLedger(text));
    expect(
      reads.filter((entry) => !listed.has(entry.path) && !under.some((d) => entry.path.startsWith(d))),
    ).toEqual([]);
    // The newest commands still come first; the rest are counted for recall.
    expect(text).toContain(
      'Commands run:\n- cd /home/me/app/ && npm run test -- --reporter=verbose src/case-0.test.ts',
    );
    expect(text).toMatch(/\d+ commands \(recall\?kind=commands\)/);
  });
});
