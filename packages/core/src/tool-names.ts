/**
 * Tool names compared the way agents spell them differently (`Read`, `read_file`, `read-file`):
 * lower-cased, without `-` and `_`. A compaction compares every tool call's name with a dozen
 * lists, several times over (file ops, the ledger, recall's arguments): each list is normalised
 * once, not once per comparison, and a name once per distinct name.
 */

/** `Read_File` → `readfile`. */
export function normaliseToolName(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

/**
 * The lists' normalised names, by list. Lists are the tables' constants and a policy's arrays,
 * never changed once made (they are `readonly`); a list no longer referenced is let go.
 */
const normalisedLists = new WeakMap<readonly string[], ReadonlySet<string>>();
/** Names seen, normalised; a session has a handful, so the bound is only a guard. */
const normalisedNames = new Map<string, string>();
const NAMES_HELD = 1_000;

/** Whether `tool` is one of `names`, compared as {@link normaliseToolName} spells them. */
export function isToolNamed(tool: string, names: readonly string[]): boolean {
  let list = normalisedLists.get(names);
  if (list === undefined) {
    list = new Set(names.map(normaliseToolName));
    normalisedLists.set(names, list);
  }
  let name = normalisedNames.get(tool);
  if (name === undefined) {
    if (normalisedNames.size >= NAMES_HELD) normalisedNames.clear();
    name = normaliseToolName(tool);
    normalisedNames.set(tool, name);
  }
  return list.has(name);
}
