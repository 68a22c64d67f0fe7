/**
 * What one tool call means to the ledger: the files it touched and the command it ran. Tool names
 * match ignoring case, `_` and `-` (`read_file` = `ReadFile`), and cover the agents whose
 * transcripts we have seen: Claude Code (`Read`, `Write`, `Edit`, `MultiEdit`, `NotebookEdit`,
 * `Glob`, `Grep`, `LS`, `Bash`), Codex (`shell`, `exec_command`, `apply_patch`), OpenCode and pi
 * (`read`, `write`, `edit`, `patch`, `list`, `bash`, `find`, `search`), Gemini CLI (`read_file`,
 * `write_file`, `replace`, `run_shell_command`, `list_directory`, `glob`, `search_file_content`),
 * Copilot CLI (`view`, `create`, `edit`, `str_replace`, `rg`, `bash`), Cursor (`run_terminal_cmd`,
 * `edit_file`, `delete_file`), Cline (`execute_command`, `read_file`, `write_to_file`,
 * `replace_in_file`, whose arguments come as XML), SWE-agent (`open`, `create`, `find_file`,
 * `str_replace_editor`, `bash`).
 */
import { DEFAULT_FILE_TOOLS, isListablePath, pathsInToolInput, type FileToolNames } from '../file-ops';
import type { ToolPart } from '../model';
import { fileOpsInPatchBody, type LedgerFileOp } from './patch';
import { fileOpsOfShellCommand } from './shell-files';
import { capText, MAX_LEDGER_COMMAND_CHARS, MAX_LEDGER_PATH_CHARS } from './types';
import { isToolNamed } from '../tool-names';

/** Tools that run a shell command line. */
export const SHELL_TOOLS: readonly string[] = [
  'Bash',
  'shell',
  'exec_command',
  'local_shell',
  'shell_command',
  'run_shell_command',
  'run_terminal_cmd',
  'execute_command',
  'run_command',
  'terminal',
  'action',
];

/** Tools beyond the policy's `fileTools` whose path arguments the ledger records, by what they do. */
export const LEDGER_FILE_TOOLS = {
  read: ['view', 'open', 'NotebookRead'],
  /** Searches and listings: the paths they looked in count as read. */
  search: [
    'Glob',
    'Grep',
    'LS',
    'list',
    'ls',
    'list_dir',
    'list_directory',
    'find',
    'find_file',
    'search',
    'rg',
  ],
  write: ['create', 'create_file', 'write_to_file'],
  edit: ['str_replace', 'insert', 'multi_edit', 'replace_in_file', 'apply_diff'],
  delete: ['delete_file', 'delete', 'remove_file'],
  patch: ['apply_patch', 'patch'],
  editor: ['str_replace_editor', 'str_replace_based_edit_tool'],
} as const;

/** How the measurement and callers see a call: it touched files, ran a command, or neither. */
export type ToolCallClass = 'files' | 'command' | 'other';

/** A command as run: the normalised line and the output it answered with. */
export interface RanCommand {
  command: string;
  output: string;
  failedCall: boolean;
}

/** What one tool call means to the ledger. `write` ops are `created` until merging knows better. */
export interface ToolCallArtifacts {
  class: ToolCallClass;
  files: LedgerFileOp[];
  command: RanCommand | null;
}

const matches = isToolNamed;

/** Tool arguments as an object: parsed from JSON text, or from Cline's `<tool><path>x</path></tool>` XML. */
function argumentsOf(input: unknown): Record<string, unknown> {
  if (typeof input === 'string') {
    try {
      return argumentsOf(JSON.parse(input) as unknown);
    } catch {
      return { raw: input };
    }
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return {};
  const args = input as Record<string, unknown>;
  const raw = args['raw'];
  if (typeof raw !== 'string' || !/^\s*<\w+>/.test(raw)) return args;
  // The outer element names the tool; its children are the arguments.
  const outer = /^\s*<(\w+)>([\s\S]*)<\/\1>\s*$/.exec(raw);
  const fromXml: Record<string, unknown> = {};
  for (const match of (outer?.[2] ?? raw).matchAll(/<(\w+)>([\s\S]*?)<\/\1>/g)) {
    fromXml[match[1]!] ??= match[2]!.trim();
  }
  return fromXml;
}

/** A path argument worth recording: listable, not absurdly long, not a URL that a read tool fetched. */
export function isRecordablePath(path: string): boolean {
  return path.length <= MAX_LEDGER_PATH_CHARS && isListablePath(path) && !/^[a-z][\w+.-]*:\/\//i.test(path);
}

/** Whitespace runs collapsed and lines trimmed (indentation is not what a command did), blank lines dropped, then capped. */
export function normaliseCommand(command: string): string {
  const lines = command
    .split(/\r?\n/)
    .map((line) => line.replace(/[ \t]+/g, ' ').trim())
    .filter((line) => line.trim() !== '');
  return capText(lines.join('\n').trim(), MAX_LEDGER_COMMAND_CHARS);
}

/** `["bash", "-lc", "npm test"]` → `npm test`; other argument vectors are joined by spaces. */
function commandOfVector(vector: readonly unknown[]): string | null {
  const words = vector.filter((word): word is string => typeof word === 'string');
  if (words.length === 0) return null;
  // Codex's `["apply_patch", "*** Begin Patch…"]`: the patch keeps its lines so its headers can be read.
  if (words[0] === 'apply_patch') return words.join('\n');
  const shell = /^(?:\/\S*\/)?(?:ba|z|da)?sh$/.test(words[0]!);
  if (shell && words.length >= 3 && /^-\w*c$/.test(words[1]!)) return words.slice(2).join(' ');
  return words.map((word) => (/\s/.test(word) ? JSON.stringify(word) : word)).join(' ');
}

function commandLine(args: Record<string, unknown>): string | null {
  for (const key of ['command', 'cmd', 'raw'] as const) {
    const value = args[key];
    if (typeof value === 'string' && value.trim() !== '') return value;
    if (Array.isArray(value)) return commandOfVector(value);
  }
  return null;
}

function stringValues(args: Record<string, unknown>): string[] {
  return Object.values(args).filter((value): value is string => typeof value === 'string');
}

const EDITOR_KINDS: Record<string, LedgerFileOp['kind']> = {
  view: 'read',
  create: 'created',
  str_replace: 'modified',
  insert: 'modified',
  undo_edit: 'modified',
};

function pathOps(kind: LedgerFileOp['kind'], args: Record<string, unknown>): LedgerFileOp[] {
  return pathsInToolInput(args).map((path) => ({ kind, path }));
}

function fileOpsOfCall(
  tool: string,
  args: Record<string, unknown>,
  fileTools: FileToolNames,
): LedgerFileOp[] | null {
  if (matches(tool, LEDGER_FILE_TOOLS.patch)) {
    const fromPatch = stringValues(args).flatMap(fileOpsInPatchBody);
    return fromPatch.length > 0 ? fromPatch : pathOps('modified', args);
  }
  if (matches(tool, LEDGER_FILE_TOOLS.editor)) {
    const kind = typeof args['command'] === 'string' ? EDITOR_KINDS[args['command']] : undefined;
    return kind === undefined ? [] : pathOps(kind, args);
  }
  if (matches(tool, LEDGER_FILE_TOOLS.delete)) return pathOps('deleted', args);
  if (matches(tool, fileTools.read) || matches(tool, LEDGER_FILE_TOOLS.read)) return pathOps('read', args);
  // A search's path may be a glob (`**/*.ts`): only plain paths name something that was looked at.
  if (matches(tool, LEDGER_FILE_TOOLS.search))
    return pathOps('read', args).filter((op) => !/[*?[\]{}]/.test(op.path));
  if (matches(tool, fileTools.write) || matches(tool, LEDGER_FILE_TOOLS.write))
    return pathOps('created', args);
  if (matches(tool, fileTools.edit) || matches(tool, LEDGER_FILE_TOOLS.edit))
    return pathOps('modified', args);
  return null;
}

/**
 * What `part` means to the ledger. A file tool whose call failed touched nothing; a failed
 * command still ran, and its failure is what the ledger is for.
 */
export function artifactsOfToolPart(
  part: ToolPart,
  fileTools: FileToolNames = DEFAULT_FILE_TOOLS,
): ToolCallArtifacts {
  const args = argumentsOf(part.input);
  const failedCall = part.status === 'error';
  const recordable = (ops: LedgerFileOp[]): LedgerFileOp[] =>
    failedCall ? [] : ops.filter((op) => isRecordablePath(op.path));
  const fileOps = fileOpsOfCall(part.tool, args, fileTools);
  if (fileOps !== null) return { class: 'files', files: recordable(fileOps), command: null };
  if (!matches(part.tool, SHELL_TOOLS)) return { class: 'other', files: [], command: null };
  const line = commandLine(args);
  if (line === null) return { class: 'command', files: [], command: null };
  const files = recordable(fileOpsOfShellCommand(line));
  // Codex edits files through its shell tool: an `apply_patch` heredoc is an edit, not a command worth listing.
  if (/^\s*apply_patch\b/.test(line) && files.length > 0) return { class: 'files', files, command: null };
  const output = part.output ?? part.error ?? '';
  return { class: 'command', files, command: { command: normaliseCommand(line), output, failedCall } };
}
