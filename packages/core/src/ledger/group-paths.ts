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

/** Paths grouped by directory, in first-seen order: one string per directory. */
export function groupPaths(paths: readonly string[]): string[] {
  const groups = new Map<string, string[]>();
  for (const path of paths) {
    const [directory, name] = splitPath(path);
    // Bare names and directories (`src/`) stand alone: a group of them would read as one directory's files.
    const key = directory === '' ? `\u0000${path}` : directory;
    const members = groups.get(key);
    if (members) members.push(name);
    else groups.set(key, [directory === '' ? path : name]);
  }
  return [...groups.entries()].map(([key, names]) => {
    if (key.startsWith('\u0000')) return names[0]!;
    return names.length === 1 ? `${key}${names[0]!}` : `${key}{${names.join(', ')}}`;
  });
}
