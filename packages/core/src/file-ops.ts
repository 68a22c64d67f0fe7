/**
 * File-operation tracking across compaction cycles (Opal's cumulative file ops).
 *
 * A summary loses the detail of which files the agent touched; these lists survive instead: each
 * compaction extracts read / written / edited paths from the tool calls it covers, merges them
 * with the lists the previous summary carried in its `metadata`, and renders them as
 * `<read-files>` / `<modified-files>` blocks after the summary text.
 *
 * The lists are bounded: the newest {@link MAX_LISTED_FILES} paths of each, newest first, and a
 * count of the rest. Cumulative lists grow with the whole history (13,933 paths at 100,000
 * messages), and every compaction rewrote them and every context read shipped them.
 */
import type { Message, ToolPart } from './model';
import { isToolNamed } from './tool-names';

/**
 * Paths a compacted range read, and paths it created, wrote, edited or deleted, each list most
 * recently touched first. `…Omitted`: how many older paths fell off the bounded list (absent: 0).
 * A path that falls off and is touched again is counted there and listed, so the counts are
 * upper bounds; no list of what fell off is kept, which is the point.
 */
export type FileOps = {
  readFiles: string[];
  modifiedFiles: string[];
  readFilesOmitted?: number;
  modifiedFilesOmitted?: number;
};

/** What one tool call did to one file. Writes and edits both count as modifications. */
export type FileOpKind = 'read' | 'write' | 'edit';

/** One file a tool call touched; `path` is as the call named it, not normalised or resolved. */
export interface FileOp {
  kind: FileOpKind;
  path: string;
}

/** Tool names per operation (the policy's `fileTools`). Matching ignores case, `_` and `-`. */
export interface FileToolNames {
  read: readonly string[];
  write: readonly string[];
  edit: readonly string[];
}

/**
 * The common agents' file tools: Claude Code (`Read`, `Write`, `Edit`, `MultiEdit`,
 * `NotebookEdit`), Gemini CLI (`read_file`, `read_many_files`, `write_file`, `replace`),
 * OpenCode and pi (`read`, `write`, `edit`), Opal (`read_file`, `write_file`, `edit_file`,
 * `edit_file_lines`), Cursor (`edit_file`, `search_replace`). SWE-agent's `str_replace_editor` and
 * Codex's `apply_patch` are recognised by their own rules and need no entry here.
 */
export const DEFAULT_FILE_TOOLS: FileToolNames = {
  read: ['read', 'read_file', 'read_many_files', 'NotebookRead'],
  write: ['write', 'write_file', 'create_file'],
  edit: ['edit', 'MultiEdit', 'NotebookEdit', 'replace', 'edit_file', 'edit_file_lines', 'search_replace'],
};

/** Editors whose `command` argument says what they did (SWE-agent, Anthropic's text editor tool). */
export const COMMAND_EDITOR_TOOLS: readonly string[] = ['str_replace_editor', 'str_replace_based_edit_tool'];

/** Tools whose argument is a Codex patch (`*** Begin Patch` … `*** End Patch`). */
export const PATCH_TOOLS: readonly string[] = ['apply_patch'];

const EDITOR_COMMAND_KINDS: Record<string, FileOpKind> = {
  view: 'read',
  create: 'write',
  str_replace: 'edit',
  insert: 'edit',
  undo_edit: 'edit',
};

/** Argument names that hold one path, in the order they are looked up. */
export const SINGLE_PATH_ARGUMENTS = [
  'path',
  'file_path',
  'filePath',
  'filepath',
  'notebook_path',
  'notebookPath',
  'absolute_path',
  'absolutePath',
  'target_file',
  'targetFile',
  'filename',
  'file',
] as const;

/** Argument names that hold a list of paths. */
export const PATH_LIST_ARGUMENTS = ['paths', 'file_paths', 'filePaths', 'files'] as const;

const PATCH_ARGUMENTS = ['input', 'patch', 'diff'] as const;

const matchesAny = isToolNamed;

/** Tool inputs are usually objects; some agents store the JSON text instead. */
function inputAsObject(input: unknown): Record<string, unknown> | null {
  if (typeof input === 'string') {
    try {
      return inputAsObject(JSON.parse(input) as unknown);
    } catch {
      return null;
    }
  }
  return input !== null && typeof input === 'object' && !Array.isArray(input)
    ? (input as Record<string, unknown>)
    : null;
}

function nonEmptyString(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

/** The file paths a tool call names, from the usual argument spellings. */
export function pathsInToolInput(input: unknown): string[] {
  const args = inputAsObject(input);
  if (args === null) return [];
  for (const key of SINGLE_PATH_ARGUMENTS) {
    const path = nonEmptyString(args[key]);
    if (path !== null) return [path];
  }
  for (const key of PATH_LIST_ARGUMENTS) {
    const list = args[key];
    if (Array.isArray(list)) return list.map(nonEmptyString).filter((path) => path !== null);
  }
  return [];
}

/**
 * What a Codex patch does: `*** Add File:` writes; `*** Update File:`, `*** Delete File:` and
 * `*** Move to:` edit. All of them are modifications: the next context must know the file
 * changed, whatever the change.
 */
export function fileOpsInPatch(patch: string): FileOp[] {
  const ops: FileOp[] = [];
  for (const line of patch.split(/\r?\n/)) {
    const match = /^\*\*\* (Add File|Update File|Delete File|Move to): (.+)$/.exec(line.trim());
    const path = match?.[2]?.trim();
    if (path) ops.push({ kind: match?.[1] === 'Add File' ? 'write' : 'edit', path });
  }
  return ops;
}

/** The patch text of an `apply_patch` call: a raw string, a `{ input | patch }` object, or Codex's shell form. */
function patchText(input: unknown): string | null {
  if (typeof input === 'string' && input.includes('*** ')) return input;
  const args = inputAsObject(input);
  if (args === null) return null;
  for (const key of PATCH_ARGUMENTS) {
    const text = nonEmptyString(args[key]);
    if (text !== null) return text;
  }
  const command = args['command'];
  if (Array.isArray(command) && command[0] === 'apply_patch') {
    const last: unknown = command[command.length - 1];
    return typeof last === 'string' ? last : null;
  }
  return null;
}

function isShellApplyPatch(input: unknown): boolean {
  const command = inputAsObject(input)?.['command'];
  return Array.isArray(command) && command[0] === 'apply_patch' && command.length > 1;
}

/**
 * What one tool call did to files. A call that failed (`status: 'error'`) did nothing worth
 * remembering; a pending or running call counts, because its effect may have landed.
 */
export function fileOpsOfToolPart(part: ToolPart, fileTools: FileToolNames = DEFAULT_FILE_TOOLS): FileOp[] {
  return fileOpsOfCall(part, fileTools).filter((op) => isListablePath(op.path));
}

/**
 * Whether a path can be listed one a line in a file block: no line break and no angle bracket.
 * Paths come from tool arguments (data): one such "path" could close the block and write the
 * summary's own structure (a forged pinned goal), and no real file is worth that.
 */
export function isListablePath(path: string): boolean {
  return !/[\n\r\v\f\u0085\u2028\u2029<>]/.test(path);
}

function fileOpsOfCall(part: ToolPart, fileTools: FileToolNames): FileOp[] {
  if (part.status === 'error') return [];
  if (matchesAny(part.tool, PATCH_TOOLS) || isShellApplyPatch(part.input)) {
    const patch = patchText(part.input);
    return patch === null ? [] : fileOpsInPatch(patch);
  }
  if (matchesAny(part.tool, COMMAND_EDITOR_TOOLS)) {
    const command = inputAsObject(part.input)?.['command'];
    const kind = typeof command === 'string' ? EDITOR_COMMAND_KINDS[command] : undefined;
    return kind === undefined ? [] : pathsInToolInput(part.input).map((path) => ({ kind, path }));
  }
  const kind: FileOpKind | null = matchesAny(part.tool, fileTools.read)
    ? 'read'
    : matchesAny(part.tool, fileTools.write)
      ? 'write'
      : matchesAny(part.tool, fileTools.edit)
        ? 'edit'
        : null;
  return kind === null ? [] : pathsInToolInput(part.input).map((path) => ({ kind, path }));
}

/** Empty file-op lists. */
export function emptyFileOps(): FileOps {
  return { readFiles: [], modifiedFiles: [] };
}

/**
 * Paths kept per list: the newest 100 read and 100 modified. What an agent works on next is in
 * the files it touched last; 100 covers every file of most real sessions (the largest transcripts
 * tried touched a few hundred over dozens of compactions) while bounding both blocks near 2,000
 * tokens of paths and the metadata near 10 KB, whatever the history.
 */
export const MAX_LISTED_FILES = 100;

/**
 * Union of file-op lists, `sets` oldest first (the previous summary's, then the range's). A path
 * ranks by the newest set that touched it and its place there; a file modified anywhere is listed
 * as modified only ("read, then edited" is an edit: Opal's promotion). Each list keeps its newest
 * {@link MAX_LISTED_FILES}; the rest, and the sets' own omitted counts, are added up.
 */
export function mergeFileOps(...sets: readonly (FileOps | null | undefined)[]): FileOps {
  const modified = new Set<string>();
  const ranked = new Set<string>();
  let readFilesOmitted = 0;
  let modifiedFilesOmitted = 0;
  for (const set of [...sets].reverse()) {
    if (!set) continue;
    for (const path of set.modifiedFiles) {
      modified.add(path);
      ranked.add(path);
    }
    for (const path of set.readFiles) ranked.add(path);
    readFilesOmitted += set.readFilesOmitted ?? 0;
    modifiedFilesOmitted += set.modifiedFilesOmitted ?? 0;
  }
  const all = [...ranked];
  const readFiles = all.filter((path) => !modified.has(path));
  const modifiedFiles = all.filter((path) => modified.has(path));
  readFilesOmitted += Math.max(0, readFiles.length - MAX_LISTED_FILES);
  modifiedFilesOmitted += Math.max(0, modifiedFiles.length - MAX_LISTED_FILES);
  return {
    readFiles: readFiles.slice(0, MAX_LISTED_FILES),
    modifiedFiles: modifiedFiles.slice(0, MAX_LISTED_FILES),
    ...(readFilesOmitted > 0 ? { readFilesOmitted } : {}),
    ...(modifiedFilesOmitted > 0 ? { modifiedFilesOmitted } : {}),
  };
}

/**
 * File ops of every tool part in `messages`, whatever the message role, bounded as
 * {@link mergeFileOps} bounds them: a path ranks by the last call that touched it.
 */
export function extractFileOps(messages: readonly Message[], fileTools?: FileToolNames): FileOps {
  // Last touch wins the rank: walk newest first, so a path's first sighting is its last touch.
  const ranked = new Set<string>();
  const modified = new Set<string>();
  for (let m = messages.length - 1; m >= 0; m -= 1) {
    const parts = messages[m]?.parts ?? [];
    for (let p = parts.length - 1; p >= 0; p -= 1) {
      const part = parts[p];
      if (part?.type !== 'tool') continue;
      const ops = fileOpsOfToolPart(part, fileTools);
      for (let o = ops.length - 1; o >= 0; o -= 1) {
        const op = ops[o]!;
        ranked.add(op.path);
        if (op.kind !== 'read') modified.add(op.path);
      }
    }
  }
  const all = [...ranked];
  return mergeFileOps({
    readFiles: all.filter((path) => !modified.has(path)),
    modifiedFiles: all.filter((path) => modified.has(path)),
  });
}

function stringList(value: unknown): string[] | null {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : null;
}

/**
 * The file ops a summary message carries in its `metadata` (`{ readFiles, modifiedFiles }`;
 * Opal's snake_case `read_files` / `modified_files` are read too). `null` when it carries none.
 */
export function fileOpsFromMetadata(
  metadata: Readonly<Record<string, unknown>> | null | undefined,
): FileOps | null {
  if (!metadata) return null;
  const readFiles = stringList(metadata['readFiles'] ?? metadata['read_files']);
  const modifiedFiles = stringList(metadata['modifiedFiles'] ?? metadata['modified_files']);
  if (readFiles === null && modifiedFiles === null) return null;
  const readFilesOmitted = count(metadata['readFilesOmitted']);
  const modifiedFilesOmitted = count(metadata['modifiedFilesOmitted']);
  return {
    readFiles: (readFiles ?? []).filter(isListablePath),
    modifiedFiles: (modifiedFiles ?? []).filter(isListablePath),
    ...(readFilesOmitted > 0 ? { readFilesOmitted } : {}),
    ...(modifiedFilesOmitted > 0 ? { modifiedFilesOmitted } : {}),
  };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : 0;
}
