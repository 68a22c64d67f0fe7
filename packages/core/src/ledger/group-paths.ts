/**
 * Paths written compactly under their common directory: `src/api/routes.ts` and
 * `src/api/auth.ts` as `src/api/{routes.ts, auth.ts}`. Each directory's group stands where its
 * newest path stood, and keeps its paths in the order given (newest first).
 */

/** `src/api/routes.ts` → [`src/api/`, `routes.ts`]; a bare name has no directory (''). */
function splitPath(path: string): [string, string] {
  const trimmed = path.replace(/\/+$/, '');
  const slash = trimmed.lastIndexOf('/');
  if (slash <= 0 || trimmed.length !== path.length) return ['', path];
  return [trimmed.slice(0, slash + 1), trimmed.slice(slash + 1)];
}

/**
 * Characters that make a path stand alone: in a group they would blur where one name ends or
 * the group begins, and a reader ({@link expandPathGroup}) could not tell the paths apart.
 */
const GROUP_SYNTAX = /[{},]/;

/** Paths grouped by directory, in first-seen order: one string per directory. */
export function groupPaths(paths: readonly string[]): string[] {
  const groups = new Map<string, string[]>();
  for (const path of paths) {
    const [directory, name] = splitPath(path);
    // Bare names and directories (`src/`) stand alone: a group of them would read as one
    // directory's files. So does a path with the group syntax's own characters in it.
    const alone = directory === '' || GROUP_SYNTAX.test(path);
    const key = alone ? `\u0000${path}` : directory;
    const members = groups.get(key);
    if (members) members.push(name);
    else groups.set(key, [alone ? path : name]);
  }
  return [...groups.entries()].map(([key, names]) => {
    if (key.startsWith('\u0000')) return names[0]!;
    return names.length === 1 ? `${key}${names[0]!}` : `${key}{${names.join(', ')}}`;
  });
}

/**
 * The paths one {@link groupPaths} entry stands for: `dir/{a, b}` is `dir/a` and `dir/b`; any
 * other entry is the path itself. Exact for what `groupPaths` writes, since a path with `{`, `}`
 * or `,` in it is never grouped; a literal path shaped `dir/{a, b}` would be read as a group.
 */
export function expandPathGroup(entry: string): string[] {
  const group = /^([^{},]*\/)\{([^{}/]+)\}$/.exec(entry);
  if (!group) return [entry];
  const names = group[2]!.split(', ');
  if (names.length < 2 || names.includes('')) return [entry];
  return names.map((name) => `${group[1]!}${name}`);
}

/** What a shared root is written as at the start of a path under it. */
export const ROOT_MARK = '…/';

/** Shortest root worth a legend line: shorter prefixes cost about what they save. */
const MIN_ROOT_CHARS = 16;

/**
 * The directory most worth writing once: the one whose prefix, shared by at least two of `paths`
 * and at least {@link MIN_ROOT_CHARS} long, saves the most characters when each path under it is
 * written `…/rest` and the root once in a legend. `null` when none saves anything. Agents name
 * files by absolute paths under one worktree (`/home/me/.wasa/worktrees/0c1b…/task-141-…/`), so
 * in real sessions most of a file list is that prefix again and again.
 */
export function sharedRoot(paths: readonly string[]): string | null {
  // A path that itself begins with the mark would read as one under the root.
  if (paths.some((path) => path.startsWith(ROOT_MARK))) return null;
  const counts = new Map<string, number>();
  for (const path of new Set(paths)) {
    for (let slash = path.indexOf('/', 1); slash !== -1; slash = path.indexOf('/', slash + 1)) {
      const prefix = path.slice(0, slash + 1);
      counts.set(prefix, (counts.get(prefix) ?? 0) + 1);
    }
  }
  let best: string | null = null;
  let bestSaving = 0;
  for (const [prefix, count] of counts) {
    if (count < 2 || prefix.length < MIN_ROOT_CHARS) continue;
    // Each path saves the prefix less the mark; the legend costs the prefix once and some words.
    const saving = count * (prefix.length - ROOT_MARK.length) - prefix.length - 40;
    if (saving > bestSaving || (saving === bestSaving && best !== null && prefix < best)) {
      best = prefix;
      bestSaving = saving;
    }
  }
  return best;
}

/** `path` with `root` written as {@link ROOT_MARK}; unchanged when it is not under `root`. */
export function underRoot(path: string, root: string | null): string {
  return root !== null && path.startsWith(root) && path.length > root.length
    ? `${ROOT_MARK}${path.slice(root.length)}`
    : path;
}
