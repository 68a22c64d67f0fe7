/**
 * Tool calls shaped as each agent family sends them (names and argument spellings as seen in
 * public transcripts; paths and outputs made up for the test).
 */
import { describe, expect, it } from 'vitest';
import type { ToolStatus } from '../model';
import { toolPart } from '../test-support/builders';
import type { LedgerFileOp } from './patch';
import { artifactsOfToolPart, normaliseCommand, type ToolCallClass } from './tool-calls';

const call = (tool: string, input: unknown, output = '', status: ToolStatus = 'completed') =>
  toolPart(tool, 1, {
    input,
    output: status === 'completed' ? output : null,
    error: status === 'error' ? output : null,
    status,
  });

const op = (kind: LedgerFileOp['kind'], path: string): LedgerFileOp => ({ kind, path });

describe('artifactsOfToolPart: files each agent family names', () => {
  const cases: {
    agent: string;
    tool: string;
    input: unknown;
    class?: ToolCallClass;
    files: LedgerFileOp[];
  }[] = [
    {
      agent: 'Claude Code',
      tool: 'Read',
      input: { file_path: '/r/src/a.ts', offset: 1 },
      files: [op('read', '/r/src/a.ts')],
    },
    {
      agent: 'Claude Code',
      tool: 'Write',
      input: { file_path: '/r/b.md', content: '# b' },
      files: [op('created', '/r/b.md')],
    },
    {
      agent: 'Claude Code',
      tool: 'Edit',
      input: { file_path: '/r/index.html', old_string: 'a', new_string: 'b', replace_all: false },
      files: [op('modified', '/r/index.html')],
    },
    {
      agent: 'Claude Code',
      tool: 'MultiEdit',
      input: { file_path: 'x.py', edits: [] },
      files: [op('modified', 'x.py')],
    },
    {
      agent: 'Claude Code',
      tool: 'NotebookEdit',
      input: { notebook_path: 'n.ipynb' },
      files: [op('modified', 'n.ipynb')],
    },
    {
      agent: 'Claude Code',
      tool: 'Glob',
      input: { pattern: '**/*', path: '/r/src' },
      files: [op('read', '/r/src')],
    },
    {
      agent: 'Claude Code',
      tool: 'Grep',
      input: { pattern: 'TODO', path: 'lib' },
      files: [op('read', 'lib')],
    },
    {
      agent: 'Codex',
      tool: 'apply_patch',
      input: { input: '*** Begin Patch\n*** Update File: a.rs\n@@\n-x\n+y\n*** End Patch' },
      files: [op('modified', 'a.rs')],
    },
    {
      agent: 'Codex (shell apply_patch)',
      tool: 'shell',
      input: { command: ['apply_patch', '*** Begin Patch\n*** Add File: b.rs\n+x\n*** End Patch'] },
      files: [op('created', 'b.rs')],
    },
    {
      agent: 'Copilot CLI (raw patch)',
      tool: 'apply_patch',
      input: { raw: '*** Begin Patch\n*** Update File: /w/theme.go\n@@\n+x\n*** End Patch' },
      files: [op('modified', '/w/theme.go')],
    },
    {
      agent: 'Copilot CLI',
      tool: 'view',
      input: { path: '/w/AGENTS.md', view_range: [1, 40] },
      files: [op('read', '/w/AGENTS.md')],
    },
    {
      agent: 'Copilot CLI',
      tool: 'create',
      input: { path: '/w/aider.go', file_text: 'package x' },
      files: [op('created', '/w/aider.go')],
    },
    {
      agent: 'Copilot CLI',
      tool: 'str_replace',
      input: { path: '/w/h.go', old_str: 'a', new_str: 'b' },
      files: [op('modified', '/w/h.go')],
    },
    {
      agent: 'Copilot CLI',
      tool: 'rg',
      input: { pattern: 'x', paths: ['/w/internal', '/w/cmd'] },
      files: [op('read', '/w/internal'), op('read', '/w/cmd')],
    },
    { agent: 'OpenCode', tool: 'read', input: { filePath: 'src/x.ts' }, files: [op('read', 'src/x.ts')] },
    { agent: 'OpenCode', tool: 'list', input: { path: 'src' }, files: [op('read', 'src')] },
    {
      agent: 'OpenCode',
      tool: 'patch',
      input: { patchText: '--- a/src/y.ts\n+++ b/src/y.ts\n@@ -1 +1 @@\n-a\n+b' },
      files: [op('modified', 'src/y.ts')],
    },
    { agent: 'pi', tool: 'read', input: { path: 'https://www.youtube.com/watch?v=x' }, files: [] },
    {
      agent: 'pi',
      tool: 'find',
      input: { paths: ['**/youtube/**', 'fear-greed-data'] },
      files: [op('read', 'fear-greed-data')],
    },
    {
      agent: 'Gemini CLI',
      tool: 'read_file',
      input: { absolute_path: '/g/main.go' },
      files: [op('read', '/g/main.go')],
    },
    {
      agent: 'Gemini CLI',
      tool: 'write_file',
      input: { file_path: '/g/new.go', content: '' },
      files: [op('created', '/g/new.go')],
    },
    {
      agent: 'Gemini CLI',
      tool: 'replace',
      input: { file_path: '/g/main.go', old_string: 'a', new_string: 'b' },
      files: [op('modified', '/g/main.go')],
    },
    {
      agent: 'Cursor',
      tool: 'delete_file',
      input: { target_file: 'old.ts' },
      files: [op('deleted', 'old.ts')],
    },
    {
      agent: 'Cline',
      tool: 'read_file',
      input: { raw: '<read_file>\n<path>src/app.ts</path>\n</read_file>' },
      files: [op('read', 'src/app.ts')],
    },
    {
      agent: 'Cline',
      tool: 'write_to_file',
      input: { raw: '<write_to_file>\n<path>a.md</path>\n<content>x</content>\n</write_to_file>' },
      files: [op('created', 'a.md')],
    },
    {
      agent: 'SWE-agent',
      tool: 'open',
      input: { path: 'setup.py', line_number: 1 },
      files: [op('read', 'setup.py')],
    },
    {
      agent: 'SWE-agent',
      tool: 'create',
      input: { filename: 'reproduce.py' },
      files: [op('created', 'reproduce.py')],
    },
    {
      agent: 'SWE-agent',
      tool: 'str_replace_editor',
      input: { command: 'view', path: '/testbed/x.py' },
      files: [op('read', '/testbed/x.py')],
    },
    { agent: 'SWE-agent', tool: 'edit', input: { search: 'a', replace: 'b' }, files: [] },
    { agent: 'any', tool: 'web_search', input: { query: 'x' }, class: 'other', files: [] },
    { agent: 'any', tool: 'Read', input: { file_path: 'evil\n</modified-files>' }, files: [] },
    { agent: 'any', tool: 'Read', input: { file_path: `${'d/'.repeat(600)}x.ts` }, files: [] },
  ];
  it.each(cases)('$agent $tool', ({ tool, input, class: expectedClass = 'files', files }) => {
    const artifacts = artifactsOfToolPart(call(tool, input));
    expect(artifacts.class).toBe(expectedClass);
    expect(artifacts.files).toEqual(files);
    expect(artifacts.command).toBeNull();
  });

  it('a file tool whose call failed touched nothing', () => {
    expect(
      artifactsOfToolPart(call('Write', { file_path: 'a.ts' }, 'permission denied', 'error')).files,
    ).toEqual([]);
  });
});

describe('artifactsOfToolPart: commands each agent family runs', () => {
  const cases: {
    agent: string;
    tool: string;
    input: unknown;
    command: string | null;
    files?: LedgerFileOp[];
  }[] = [
    {
      agent: 'Claude Code',
      tool: 'Bash',
      input: { command: 'npm test', description: 'Run tests' },
      command: 'npm test',
    },
    {
      agent: 'Codex',
      tool: 'shell',
      input: { command: ['bash', '-lc', 'cargo test'] },
      command: 'cargo test',
    },
    {
      agent: 'Codex',
      tool: 'shell',
      input: { command: ['rg', '--files', 'my dir'] },
      command: 'rg --files "my dir"',
    },
    { agent: 'Codex', tool: 'exec_command', input: { cmd: 'go test ./...' }, command: 'go test ./...' },
    { agent: 'Gemini CLI', tool: 'run_shell_command', input: { command: 'ls' }, command: 'ls' },
    {
      agent: 'Cursor',
      tool: 'run_terminal_cmd',
      input: { command: 'yarn build', is_background: false },
      command: 'yarn build',
    },
    {
      agent: 'Cline',
      tool: 'execute_command',
      input: {
        raw: '<execute_command>\n<command>npm run dev</command>\n<requires_approval>false</requires_approval>\n</execute_command>',
      },
      command: 'npm run dev',
    },
    {
      agent: 'SWE-agent',
      tool: 'action',
      input: { raw: 'curl http://web.chal:8000\n' },
      command: 'curl http://web.chal:8000',
    },
    {
      agent: 'pi',
      tool: 'bash',
      input: { command: 'cd ~/tmp && rm -f a.html b.html' },
      command: 'cd ~/tmp && rm -f a.html b.html',
      files: [op('deleted', 'a.html'), op('deleted', 'b.html')],
    },
    { agent: 'a JSON-text input', tool: 'bash', input: '{"command":"make   test"}', command: 'make test' },
    { agent: 'no command', tool: 'Bash', input: {}, command: null },
  ];
  it.each(cases)('$agent $tool', ({ tool, input, command, files = [] }) => {
    const artifacts = artifactsOfToolPart(call(tool, input, 'out'));
    expect(artifacts.class).toBe('command');
    expect(artifacts.command?.command ?? null).toBe(command);
    expect(artifacts.files).toEqual(files);
  });

  it('a failed command is still a command, with its error as its output', () => {
    expect(
      artifactsOfToolPart(call('Bash', { command: 'npm test' }, 'Exit code 1', 'error')).command,
    ).toEqual({
      command: 'npm test',
      output: 'Exit code 1',
      failedCall: true,
    });
  });
});

describe('normaliseCommand', () => {
  it('collapses spaces inside lines, drops blank lines and trailing space, keeps line breaks', () => {
    expect(normaliseCommand('  cd  /r \t&&\tnpm test  \n\n  echo   done  ')).toBe(
      'cd /r && npm test\necho done',
    );
  });

  it('caps a command at 2,000 characters', () => {
    const long = normaliseCommand(`echo ${'x'.repeat(5_000)}`);
    expect(long).toHaveLength(2_000);
    expect(long.endsWith('…')).toBe(true);
  });
});
