import {
  fileOpsOfToolPart,
  mergeFileOps,
  type FileOps,
  type FileToolNames,
  type Message,
} from '@compactor/core';

/**
 * Core's `extractFileOps` over messages given a window at a time, oldest first: each message's
 * tool parts are read once, and the result is the one `extractFileOps` gives the whole range (a
 * path ranks by its last touch, modified if any touch modified it). Merging each window's own
 * lists would rank a path read late but modified early among the late window's reads.
 */
export class FileOpsRanking {
  /** Each path once, whether a touch modified it, in the order of their last touches. */
  private readonly paths = new Map<string, boolean>();

  constructor(private readonly fileTools?: FileToolNames) {}

  add(messages: readonly Message[]): void {
    for (const message of messages) {
      for (const part of message.parts) {
        if (part.type !== 'tool') continue;
        for (const op of fileOpsOfToolPart(part, this.fileTools)) {
          const modified = op.kind !== 'read' || (this.paths.get(op.path) ?? false);
          // Re-inserted so the map's order stays the order of last touches.
          this.paths.delete(op.path);
          this.paths.set(op.path, modified);
        }
      }
    }
  }

  /** The lists of everything added, bounded as core bounds them (`mergeFileOps`). */
  result(): FileOps {
    // Newest touch first, as extractFileOps walks.
    const ranked = [...this.paths.entries()].reverse();
    return mergeFileOps({
      readFiles: ranked.filter(([, modified]) => !modified).map(([path]) => path),
      modifiedFiles: ranked.filter(([, modified]) => modified).map(([path]) => path),
    });
  }
}
