/**
 * Is a file the agent touched still named in the context it is served? Named means the path is
 * there verbatim (in a message's text, a tool call's arguments or a result), or the session's
 * ledger names it in its group: core's ledger writes the paths of one directory as
 * `src/api/{routes.ts, auth.ts}` and a long root they share once, as `…/` with a legend line, so
 * `src/api/auth.ts` itself is not a substring of what the model reads, yet the model is told it.
 * Core reads those groups back (`pathsInRenderedLedger`), exactly as its renderer wrote them.
 * A file the ledger had no room to list is still named by its directory when the ledger's
 * "Files not listed, by directory:" section names a directory it is under (`directoriesInRenderedLedger`;
 * never the directory every file of the session shares).
 */
import {
  directoriesInRenderedLedger,
  holdsVerbatim,
  pathsInRenderedLedger,
  type VerbatimText,
} from '@compactor/core';

/**
 * How a context names a file: the path verbatim, only inside its ledger group, only by a
 * directory it is under, or not at all.
 */
export type FileNamed = 'verbatim' | 'group' | 'directory' | null;

/** A served context prepared for many file lookups. */
export interface FileLookup {
  served: VerbatimText;
  grouped: ReadonlySet<string>;
  directories: readonly string[];
}

/** `served`: the context's text normalised; `contextText`: the same text as written (line breaks kept). */
export function fileLookup(served: VerbatimText, contextText: string): FileLookup {
  return {
    served,
    grouped: new Set(pathsInRenderedLedger(contextText)),
    directories: directoriesInRenderedLedger(contextText),
  };
}

export function fileNamed(lookup: FileLookup, path: string): FileNamed {
  if (holdsVerbatim(lookup.served, path)) return 'verbatim';
  if (lookup.grouped.has(path)) return 'group';
  return lookup.directories.some((directory) => path.startsWith(directory)) ? 'directory' : null;
}
