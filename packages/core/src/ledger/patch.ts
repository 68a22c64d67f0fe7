/**
 * Files a patch body touches, in the two formats agents send: Codex's `*** Begin Patch` envelope
 * and unified diffs (`diff --git`, `--- a/x` / `+++ b/x`, `/dev/null` for created and deleted).
 */
import type { LedgerFileKind } from './types';

/** One thing one call did to one file, before merging. */
export interface LedgerFileOp {
  kind: LedgerFileKind;
  path: string;
}

const CODEX_LINE = /^\*\*\* (Add File|Update File|Delete File|Move to): (.+)$/;

/** Whether `text` holds a Codex patch. */
export function isCodexPatch(text: string): boolean {
  return text.includes('*** Begin Patch') || /^\*\*\* (?:Add|Update|Delete) File: /m.test(text);
}

/** Whether `text` holds a unified diff (a `---` line directly followed by a `+++` line). */
export function isUnifiedDiff(text: string): boolean {
  return /^--- \S.*\r?\n\+\+\+ \S/m.test(text) || /^diff --git /m.test(text);
}

/** Codex patch: Add creates, Update modifies, Delete deletes, and a Move deletes the old path and creates the new. */
export function fileOpsInCodexPatch(patch: string): LedgerFileOp[] {
  const ops: LedgerFileOp[] = [];
  for (const line of patch.split(/\r?\n/)) {
    const match = CODEX_LINE.exec(line.trim());
    const path = match?.[2]?.trim();
    if (!match || !path) continue;
    const action = match[1];
    if (action === 'Add File') ops.push({ kind: 'created', path });
    else if (action === 'Delete File') ops.push({ kind: 'deleted', path });
    else if (action === 'Update File') ops.push({ kind: 'modified', path });
    else {
      const moved = ops.at(-1);
      if (moved?.kind === 'modified') moved.kind = 'deleted';
      ops.push({ kind: 'created', path });
    }
  }
  return ops;
}

/** `a/src/x.ts` → `src/x.ts`; a timestamp after a tab (`--- x.ts\t2024-…`) is dropped. */
function diffPath(raw: string): string | null {
  const path = raw.split('\t')[0]!.trim();
  if (path === '' || path === '/dev/null') return null;
  return /^[ab]\//.test(path) ? path.slice(2) : path;
}

/** Unified diff: `--- /dev/null` creates, `+++ /dev/null` deletes, anything else modifies. */
export function fileOpsInUnifiedDiff(diff: string): LedgerFileOp[] {
  const ops: LedgerFileOp[] = [];
  const lines = diff.split(/\r?\n/);
  for (let index = 0; index + 1 < lines.length; index += 1) {
    const from = /^--- (.+)$/.exec(lines[index]!);
    const to = /^\+\+\+ (.+)$/.exec(lines[index + 1]!);
    if (!from || !to) continue;
    const oldPath = diffPath(from[1]!);
    const newPath = diffPath(to[1]!);
    if (oldPath === null && newPath !== null) ops.push({ kind: 'created', path: newPath });
    else if (newPath === null && oldPath !== null) ops.push({ kind: 'deleted', path: oldPath });
    else if (oldPath !== null && newPath !== null) {
      if (oldPath !== newPath) ops.push({ kind: 'deleted', path: oldPath });
      ops.push({ kind: newPath === oldPath ? 'modified' : 'created', path: newPath });
    }
    index += 1;
  }
  return ops;
}

/** The files a patch body of either format touches; nothing for text that is neither. */
export function fileOpsInPatchBody(text: string): LedgerFileOp[] {
  if (isCodexPatch(text)) return fileOpsInCodexPatch(text);
  if (isUnifiedDiff(text)) return fileOpsInUnifiedDiff(text);
  return [];
}
