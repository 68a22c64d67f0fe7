import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FILE_TOOLS,
  emptyFileOps,
  extractFileOps,
  fileOpsFromMetadata,
  fileOpsInPatch,
  fileOpsOfToolPart,
  mergeFileOps,
  pathsInToolInput,
  MAX_LISTED_FILES,
  type FileOp,
} from './file-ops';
import { renderFileOps, stripFileOpsBlocks, withFileOps } from './file-ops-render';
import type { ToolPart, ToolStatus } from './model';
import { DEFAULT_POLICY, POLICY_PRESETS } from './policy';
import { assistant, conversation, toolPart } from './test-support/builders';

const tool = (name: string, input: unknown, status?: ToolStatus): ToolPart =>
  toolPart(name, 1, { input, status });

const CODEX_PATCH = [
  '*** Begin Patch',
  '*** Add File: src/new.ts',
  '+export const x = 1;',
  '*** Update File: src/old.ts',
  '*** Move to: src/renamed.ts',
  '@@',
  '-a',
  '+b',
  '*** Delete File: src/gone.ts',
  '*** End Patch',
].join('\n');

describe('fileOpsOfToolPart: tool conventions of the common agents', () => {
  const cases: { agent: string; tool: string; input: unknown; expected: FileOp[] }[] = [
    {
      agent: 'Claude Code',
      tool: 'Read',
      input: { file_path: '/r/a.ts' },
      expected: [{ kind: 'read', path: '/r/a.ts' }],
    },
    {
      agent: 'Claude Code',
      tool: 'Write',
      input: { file_path: '/r/b.ts', content: 'x' },
      expected: [{ kind: 'write', path: '/r/b.ts' }],
    },
    {
      agent: 'Claude Code',
      tool: 'Edit',
      input: { file_path: '/r/c.ts', old_string: 'a', new_string: 'b' },
      expected: [{ kind: 'edit', path: '/r/c.ts' }],
    },
    {
      agent: 'Claude Code',
      tool: 'MultiEdit',
      input: { file_path: '/r/d.ts', edits: [] },
      expected: [{ kind: 'edit', path: '/r/d.ts' }],
    },
    {
      agent: 'Claude Code',
      tool: 'NotebookEdit',
      input: { notebook_path: '/r/n.ipynb', new_source: '' },
      expected: [{ kind: 'edit', path: '/r/n.ipynb' }],
    },
    {
      agent: 'Gemini CLI',
      tool: 'read_file',
      input: { absolute_path: '/g/a.py' },
      expected: [{ kind: 'read', path: '/g/a.py' }],
    },
    {
      agent: 'Gemini CLI',
      tool: 'read_many_files',
      input: { paths: ['a.md', 'b.md', 3] },
      expected: [
        { kind: 'read', path: 'a.md' },
        { kind: 'read', path: 'b.md' },
      ],
    },
    {
      agent: 'Gemini CLI',
      tool: 'write_file',
      input: { file_path: '/g/b.py', content: '' },
      expected: [{ kind: 'write', path: '/g/b.py' }],
    },
    {
      agent: 'Gemini CLI',
      tool: 'replace',
      input: { file_path: '/g/c.py', old_string: 'a', new_string: 'b' },
      expected: [{ kind: 'edit', path: '/g/c.py' }],
    },
    {
      agent: 'OpenCode',
      tool: 'read',
      input: { filePath: 'src/x.ts' },
      expected: [{ kind: 'read', path: 'src/x.ts' }],
    },
    {
      agent: 'OpenCode',
      tool: 'write',
      input: { filePath: 'src/y.ts' },
      expected: [{ kind: 'write', path: 'src/y.ts' }],
    },
    {
      agent: 'OpenCode',
      tool: 'edit',
      input: { filePath: 'src/z.ts' },
      expected: [{ kind: 'edit', path: 'src/z.ts' }],
    },
    {
      agent: 'pi',
      tool: 'read',
      input: { path: 'README.md' },
      expected: [{ kind: 'read', path: 'README.md' }],
    },
    {
      agent: 'Opal',
      tool: 'edit_file_lines',
      input: { path: 'lib/a.ex' },
      expected: [{ kind: 'edit', path: 'lib/a.ex' }],
    },
    {
      agent: 'SWE-agent',
      tool: 'str_replace_editor',
      input: { command: 'view', path: '/repo/a.py' },
      expected: [{ kind: 'read', path: '/repo/a.py' }],
    },
    {
      agent: 'SWE-agent',
      tool: 'str_replace_editor',
      input: { command: 'create', path: '/repo/b.py', file_text: '' },
      expected: [{ kind: 'write', path: '/repo/b.py' }],
    },
    {
      agent: 'SWE-agent',
      tool: 'str_replace_editor',
      input: { command: 'str_replace', path: '/repo/c.py' },
      expected: [{ kind: 'edit', path: '/repo/c.py' }],
    },
    {
      agent: 'SWE-agent',
      tool: 'str_replace_editor',
      input: { command: 'insert', path: '/repo/d.py' },
      expected: [{ kind: 'edit', path: '/repo/d.py' }],
    },
    {
      agent: 'SWE-agent',
      tool: 'str_replace_editor',
      input: { command: 'undo_edit', path: '/repo/e.py' },
      expected: [{ kind: 'edit', path: '/repo/e.py' }],
    },
    {
      agent: 'SWE-agent',
      tool: 'str_replace_editor',
      input: { command: 'unknown', path: '/repo/f.py' },
      expected: [],
    },
    {
      agent: 'Anthropic text editor',
      tool: 'str_replace_based_edit_tool',
      input: { command: 'view', path: 'x' },
      expected: [{ kind: 'read', path: 'x' }],
    },
    {
      agent: 'Codex',
      tool: 'apply_patch',
      input: { input: CODEX_PATCH },
      expected: [
        { kind: 'write', path: 'src/new.ts' },
        { kind: 'edit', path: 'src/old.ts' },
        { kind: 'edit', path: 'src/renamed.ts' },
        { kind: 'edit', path: 'src/gone.ts' },
      ],
    },
    {
      agent: 'Codex (freeform)',
      tool: 'apply_patch',
      input: CODEX_PATCH,
      expected: fileOpsInPatch(CODEX_PATCH),
    },
    {
      agent: 'Codex (shell form)',
      tool: 'shell',
      input: { command: ['apply_patch', CODEX_PATCH] },
      expected: fileOpsInPatch(CODEX_PATCH),
    },
    { agent: 'Codex (no patch)', tool: 'apply_patch', input: { other: 1 }, expected: [] },
    {
      agent: 'JSON text input',
      tool: 'Read',
      input: '{"file_path":"j.ts"}',
      expected: [{ kind: 'read', path: 'j.ts' }],
    },
    { agent: 'bad JSON text', tool: 'Read', input: '{not json', expected: [] },
    { agent: 'not a file tool', tool: 'bash', input: { command: 'cat a.ts' }, expected: [] },
    { agent: 'no path argument', tool: 'Read', input: { offset: 3 }, expected: [] },
  ];
  it.each(cases)('$agent $tool', ({ tool: name, input, expected }) => {
    expect(fileOpsOfToolPart(tool(name, input))).toEqual(expected);
  });

  it('ignores failed calls but counts unfinished ones (their effect may have landed)', () => {
    expect(fileOpsOfToolPart(tool('Write', { file_path: 'a' }, 'error'))).toEqual([]);
    expect(fileOpsOfToolPart(tool('Write', { file_path: 'a' }, 'running'))).toEqual([
      { kind: 'write', path: 'a' },
    ]);
  });

  it('maps tool names through the policy lists, ignoring case, "_" and "-"', () => {
    const fileTools = { read: ['cat-file'], write: [], edit: ['patch_file'] };
    expect(fileOpsOfToolPart(tool('CAT_FILE', { path: 'a' }), fileTools)).toEqual([
      { kind: 'read', path: 'a' },
    ]);
    expect(fileOpsOfToolPart(tool('patchFile', { path: 'b' }), fileTools)).toEqual([
      { kind: 'edit', path: 'b' },
    ]);
    expect(fileOpsOfToolPart(tool('read', { path: 'c' }), fileTools)).toEqual([]);
    expect(DEFAULT_FILE_TOOLS.read).toContain('read');
  });
});

describe('pathsInToolInput', () => {
  it.each([
    [{ path: ' a.ts ' }, ['a.ts']],
    [{ file_path: 'b' }, ['b']],
    [{ filePath: 'c' }, ['c']],
    [{ notebook_path: 'd' }, ['d']],
    [{ absolute_path: 'e' }, ['e']],
    [{ target_file: 'f' }, ['f']],
    [{ file_paths: ['g', ''] }, ['g']],
    [{ path: '' }, []],
    [null, []],
    [['a'], []],
    [42, []],
  ])('%j → %j', (input, expected) => {
    expect(pathsInToolInput(input)).toEqual(expected);
  });
});

describe('extractFileOps and mergeFileOps', () => {
  it('collects, de-duplicates, promotes read-then-modified to modified, newest touch first', () => {
    const messages = conversation([
      assistant([tool('Read', { file_path: 'b.ts' }), tool('Read', { file_path: 'a.ts' })]),
      assistant([tool('Edit', { file_path: 'a.ts' }), tool('Read', { file_path: 'b.ts' })]),
      assistant([tool('Write', { file_path: 'c.ts' })]),
    ]);
    expect(extractFileOps(messages)).toEqual({ readFiles: ['b.ts'], modifiedFiles: ['c.ts', 'a.ts'] });
  });

  it('ranks a path by its last touch, whatever the kind', () => {
    const messages = conversation([
      assistant([tool('Edit', { file_path: 'src/old-edit.ts' }), tool('Read', { file_path: 'README.md' })]),
      assistant([tool('Write', { file_path: 'src/new.ts' })]),
      // Read again after its edit: still a modified file, now the most recently touched one.
      assistant([tool('Read', { file_path: 'src/old-edit.ts' })]),
    ]);
    expect(extractFileOps(messages)).toEqual({
      readFiles: ['README.md'],
      modifiedFiles: ['src/old-edit.ts', 'src/new.ts'],
    });
  });

  it('merges with the previous summary (older sets first), promoting files read earlier and modified now', () => {
    const previous = { readFiles: ['x.ts', 'y.ts'], modifiedFiles: ['z.ts'] };
    const current = { readFiles: ['z.ts', 'w.ts'], modifiedFiles: ['x.ts'] };
    expect(mergeFileOps(previous, current)).toEqual({
      readFiles: ['w.ts', 'y.ts'],
      modifiedFiles: ['x.ts', 'z.ts'],
    });
    expect(mergeFileOps(null, undefined)).toEqual(emptyFileOps());
  });
});

describe('fileOpsFromMetadata', () => {
  it.each([
    [
      { readFiles: ['a'], modifiedFiles: ['b'] },
      { readFiles: ['a'], modifiedFiles: ['b'] },
    ],
    [
      { read_files: ['a', 1], modified_files: ['b'] },
      { readFiles: ['a'], modifiedFiles: ['b'] },
    ],
    [{ modifiedFiles: ['b'] }, { readFiles: [], modifiedFiles: ['b'] }],
    [
      { readFiles: ['a'], modifiedFiles: [], readFilesOmitted: 13_833, modifiedFilesOmitted: 0 },
      { readFiles: ['a'], modifiedFiles: [], readFilesOmitted: 13_833 },
    ],
    [
      { readFiles: ['a'], modifiedFiles: [], readFilesOmitted: -3, modifiedFilesOmitted: '7' },
      { readFiles: ['a'], modifiedFiles: [] },
    ],
    [{ readFiles: 'a' }, null],
    [{}, null],
    [null, null],
  ])('%j → %j', (metadata, expected) => {
    expect(fileOpsFromMetadata(metadata)).toEqual(expected);
  });
});

describe('rendering', () => {
  it('renders both blocks, one path a line, and nothing for empty lists', () => {
    expect(renderFileOps({ readFiles: ['a.ts'], modifiedFiles: ['b.ts', 'c.ts'] })).toBe(
      '<read-files>\na.ts\n</read-files>\n\n<modified-files>\nb.ts\nc.ts\n</modified-files>',
    );
    expect(renderFileOps({ readFiles: [], modifiedFiles: ['b.ts'] })).toBe(
      '<modified-files>\nb.ts\n</modified-files>',
    );
    expect(renderFileOps(emptyFileOps())).toBe('');
  });

  it(`lists at most ${MAX_LISTED_FILES} paths a block and says how many it leaves out`, () => {
    const many = Array.from({ length: 50_000 }, (_, i) => `src/module${String(i).padStart(5, '0')}.ts`);
    const rendered = renderFileOps({ readFiles: many, modifiedFiles: ['a.ts'], modifiedFilesOmitted: 2 });
    const lines = rendered.split('\n');
    expect(lines.filter((line) => line.startsWith('src/'))).toEqual(many.slice(0, MAX_LISTED_FILES));
    expect(rendered).toContain(
      `(… and ${(50_000 - MAX_LISTED_FILES).toLocaleString('en-US')} more files read, not listed)\n</read-files>`,
    );
    expect(rendered).toContain(
      '<modified-files>\na.ts\n(… and 2 more files modified, not listed)\n</modified-files>',
    );
    // What a summary carries stays bounded whatever the session touched.
    expect(rendered.length).toBeLessThan(5_000);
    expect(stripFileOpsBlocks(`Summary.\n\n${rendered}`)).toBe('Summary.');
  });

  it('withFileOps replaces blocks already present instead of listing files twice', () => {
    const once = withFileOps('Summary.', { readFiles: ['a'], modifiedFiles: [] });
    expect(once).toBe('Summary.\n\n<read-files>\na\n</read-files>');
    expect(withFileOps(once, { readFiles: ['a'], modifiedFiles: ['b'] })).toBe(
      'Summary.\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\n</modified-files>',
    );
    expect(withFileOps(once, null)).toBe('Summary.');
    expect(withFileOps('', { readFiles: ['a'], modifiedFiles: [] })).toBe('<read-files>\na\n</read-files>');
    expect(stripFileOpsBlocks('A\n\n<modified-files>\nb\n</modified-files>\n\n\n\nB')).toBe('A\n\nB');
  });
});

describe('policy wiring', () => {
  it("takes the policy's fileTools as is, and keeps the editors' own rules when they are listed there", () => {
    const messages = conversation([
      assistant([
        tool('Read', { file_path: 'a.ts' }),
        tool('str_replace_editor', { command: 'view', path: 'b.ts' }),
        tool('apply_patch', { input: '*** Update File: c.ts' }),
      ]),
    ]);
    const expected = { readFiles: ['b.ts', 'a.ts'], modifiedFiles: ['c.ts'] };
    expect(extractFileOps(messages, DEFAULT_POLICY.fileTools)).toEqual(expected);
    for (const policy of Object.values(POLICY_PRESETS))
      expect(extractFileOps(messages, policy.fileTools)).toEqual(expected);
  });
});
