/**
 * The file lists as the model sees them: bounded to a token budget, rendered as
 * `<read-files>` / `<modified-files>` blocks after a summary's text, and stripped again when a
 * summary comes back as the previous one.
 */
import { MAX_LISTED_FILES, type FileOps } from './file-ops';

/** `ops` listing at most `maxListed` paths of each list, the rest added to the omitted counts. */
export function limitFileOps(ops: FileOps, maxListed: number): FileOps {
  const keep = Math.max(0, Math.floor(maxListed));
  const readFilesOmitted = (ops.readFilesOmitted ?? 0) + Math.max(0, ops.readFiles.length - keep);
  const modifiedFilesOmitted = (ops.modifiedFilesOmitted ?? 0) + Math.max(0, ops.modifiedFiles.length - keep);
  return {
    readFiles: ops.readFiles.slice(0, keep),
    modifiedFiles: ops.modifiedFiles.slice(0, keep),
    ...(readFilesOmitted > 0 ? { readFilesOmitted } : {}),
    ...(modifiedFilesOmitted > 0 ? { modifiedFilesOmitted } : {}),
  };
}

/**
 * `ops` with as many of the newest paths as fit `maxTokens` once rendered ({@link renderFileOps},
 * counted by `count`): on a small window a hundred paths would take most of the context. Halves
 * the listed count until the blocks fit (none listed at worst: the counts remain).
 */
export function fitFileOps(ops: FileOps, maxTokens: number, count: (text: string) => number): FileOps {
  let listed = Math.max(ops.readFiles.length, ops.modifiedFiles.length);
  let bounded = ops;
  while (listed > 0 && count(renderFileOps(bounded)) > maxTokens) {
    listed = Math.floor(listed / 2);
    bounded = limitFileOps(ops, listed);
  }
  return bounded;
}

/**
 * `<read-files>` and `<modified-files>` blocks, one path a line, newest first, at most
 * {@link MAX_LISTED_FILES} each, then how many more there were; empty lists render nothing.
 */
export function renderFileOps(ops: FileOps): string {
  const blocks: string[] = [];
  const read = fileBlock('read-files', ops.readFiles, ops.readFilesOmitted, 'read');
  const modified = fileBlock('modified-files', ops.modifiedFiles, ops.modifiedFilesOmitted, 'modified');
  if (read !== null) blocks.push(read);
  if (modified !== null) blocks.push(modified);
  return blocks.join('\n\n');
}

function fileBlock(
  tag: string,
  paths: readonly string[],
  omitted: number | undefined,
  verb: string,
): string | null {
  if (paths.length === 0) return null;
  const listed = paths.slice(0, MAX_LISTED_FILES);
  const more = paths.length - listed.length + (omitted ?? 0);
  const line = more > 0 ? `\n(… and ${more.toLocaleString('en-US')} more files ${verb}, not listed)` : '';
  return `<${tag}>\n${listed.join('\n')}${line}\n</${tag}>`;
}

/**
 * Tag around the rendered artifact ledger a summary message shows in place of the file lists
 * (summary-messages.ts). Its entries are escaped prompt data, so a closing tag inside one has a
 * backslash before it and does not end the block.
 */
export const LEDGER_BLOCK_TAG = 'session-ledger';

const FILE_OPS_BLOCK = new RegExp(
  `<(read-files|modified-files|${LEDGER_BLOCK_TAG})>[\\s\\S]*?(?<!\\\\)<\\/\\1>`,
  'g',
);

/**
 * `text` without any `<read-files>` / `<modified-files>` blocks (e.g. echoed by the summarizer)
 * or ledger block: they are rendered again from metadata and the stored ledger, so a summary fed
 * back as the previous one would otherwise carry them twice.
 */
export function stripFileOpsBlocks(text: string): string {
  return text
    .replace(FILE_OPS_BLOCK, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * `text` followed by the rendered file ops, replacing any blocks it already had, so rendering
 * twice (truncate text, then the summary message) never lists the files twice.
 */
export function withFileOps(text: string, ops: FileOps | null | undefined): string {
  const body = stripFileOpsBlocks(text);
  const rendered = ops ? renderFileOps(ops) : '';
  if (rendered === '') return body;
  return body === '' ? rendered : `${body}\n\n${rendered}`;
}
