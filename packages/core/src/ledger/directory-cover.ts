/**
 * The directories that hold the files a ledger block had no room to list, so that every such
 * file is at least named by the group it belongs to (`src/api/`, `test/`) when its own path is
 * not. Few directories, as deep as their number allows: the covers go from each file's own
 * directory (finest) to fewer, shallower ones, merging the deepest first.
 *
 * A cover never names the directory every file of the session shares (a worktree's root; one
 * for its absolute paths, one for its relative ones) or anything above it: "somewhere in the repository" names no group. A file directly in that
 * directory has no group to be named by.
 */

/** The directory a path is in (`src/api/` for `src/api/a.ts`); a path ending in `/` is its own. */
export function directoryOf(path: string): string {
  if (path.endsWith('/')) return path;
  return path.slice(0, path.lastIndexOf('/') + 1);
}

/** The longest directory every path is under ('' when they share none). */
export function commonDirectory(paths: readonly string[]): string {
  if (paths.length === 0) return '';
  let common = directoryOf(paths[0]!);
  for (const path of paths) {
    while (common !== '' && !path.startsWith(common)) common = directoryOf(common.slice(0, -1));
  }
  return common;
}

/**
 * The directories the session's files share, one for its absolute paths and one for its relative
 * ones (a session names files both ways: `/home/me/app/src/a.ts` and `node_modules/x/`); none
 * for a kind it has no path of. No cover names one of them or anything above it.
 */
export function sharedDirectories(paths: readonly string[]): string[] {
  const absolute = paths.filter((path) => path.startsWith('/'));
  const relative = paths.filter((path) => !path.startsWith('/'));
  return [
    ...(absolute.length > 0 ? [commonDirectory(absolute) || '/'] : []),
    ...(relative.length > 0 ? [commonDirectory(relative)] : []),
  ];
}

/** A directory that names a group: below the shared one of its kind, with a name of its own (not `./`). */
function namesGroup(directory: string, shared: readonly string[]): boolean {
  const floor = shared.find((candidate) => candidate.startsWith('/') === directory.startsWith('/'));
  return (
    floor !== undefined &&
    directory.startsWith(floor) &&
    directory.length > floor.length &&
    /[^/.]/.test(directory)
  );
}

/** `directory`'s ancestors that name a group below `shared`, nearest first. */
function ancestors(directory: string, shared: readonly string[]): string[] {
  const found: string[] = [];
  for (
    let at = directory.lastIndexOf('/', directory.length - 2);
    at >= 0;
    at = directory.lastIndexOf('/', at - 1)
  ) {
    const ancestor = directory.slice(0, at + 1);
    if (!namesGroup(ancestor, shared)) break;
    found.push(ancestor);
    if (at === 0) break;
  }
  return found;
}

/**
 * The covers of `paths` (newest first) from finest to coarsest, each a list of directories in
 * the order of the newest file under them, none under another. `shared`: the directories every
 * file of the session is under ({@link sharedDirectories} of all of them), which no cover names.
 * Paths with no group below them are named as themselves at the end of each cover when there
 * are at most {@link MAX_LOOSE_FILES} of them, else in no cover. `[]` when there is nothing to name.
 */
export function directoryCovers(paths: readonly string[], shared: readonly string[]): string[][] {
  const own = new Set(paths.map(directoryOf).filter((directory) => namesGroup(directory, shared)));
  // A few files directly in a shared directory (`go.mod`, `.gitignore`) are named as themselves.
  const loose = paths.filter((path) => !path.endsWith('/') && !namesGroup(directoryOf(path), shared));
  const withLoose = (cover: string[]) => (loose.length <= MAX_LOOSE_FILES ? [...cover, ...loose] : cover);
  let cover = withoutNested([...own]);
  const covers = [cover];
  for (;;) {
    const merged = mergeDeepest(cover, shared);
    if (merged === null) break;
    cover = merged;
    covers.push(cover);
  }
  return covers.map(withLoose).filter((entries) => entries.length > 0);
}

/** Most files with no group a cover names one by one; more, and it names none of them. */
export const MAX_LOOSE_FILES = 3;

/** Each directory as the outermost of the list that holds it, each once, where its newest one stood. */
function withoutNested(directories: readonly string[]): string[] {
  const listed = new Set(directories);
  const outermost = (directory: string): string => {
    let outer = directory;
    for (
      let at = directory.indexOf('/');
      at !== -1 && at < directory.length - 1;
      at = directory.indexOf('/', at + 1)
    ) {
      if (listed.has(directory.slice(0, at + 1))) {
        outer = directory.slice(0, at + 1);
        break;
      }
    }
    return outer;
  };
  return [...new Set(directories.map(outermost))];
}

const depth = (directory: string): number => directory.split('/').length;

/**
 * The cover with the deepest directory that holds two or more of its entries in their place
 * (where the newest of them stood); `null` when no two entries share a group.
 */
function mergeDeepest(cover: readonly string[], shared: readonly string[]): string[] | null {
  const under = new Map<string, number>();
  for (const directory of cover) {
    for (const ancestor of ancestors(directory, shared)) under.set(ancestor, (under.get(ancestor) ?? 0) + 1);
  }
  let best: string | null = null;
  for (const [ancestor, count] of under) {
    if (count < 2) continue;
    if (
      best === null ||
      depth(ancestor) > depth(best) ||
      (depth(ancestor) === depth(best) && count > under.get(best)!)
    )
      best = ancestor;
  }
  if (best === null) return null;
  const merged = best;
  return [...new Set(cover.map((directory) => (directory.startsWith(merged) ? merged : directory)))];
}
