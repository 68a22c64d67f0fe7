/**
 * The file paths a rendered ledger names, read back from text that holds it (a summary message,
 * a served context): each file section's entries with their `dir/{a, b}` groups expanded and a
 * leading `…/` replaced by the root its legend line names. The inverse of what
 * {@link renderLedger} writes for files, exact because the writer never groups a path with
 * `{`, `}` or `,` in it and never uses a root when a path itself begins with `…/`
 * (group-paths.ts). For readers that check whether a path is still named (the survival
 * benchmark); a path written with an escaped bracket is read as written.
 */
import { expandPathGroup, ROOT_MARK } from './group-paths';
import {
  DIRECTORY_SECTION_TITLE,
  FILE_SECTION_TITLES,
  LEDGER_HEADING,
  ROOT_LEGEND_LEAD,
  ROOT_LEGEND_TAIL,
} from './render';

const ENTRY = /^- (.*)$/;

/** Every path the ledgers rendered in `text` name, in the order written, each once. */
export function pathsInRenderedLedger(text: string): string[] {
  // The directories' section names a few files with no directory of their own by their path.
  return readEntries(text, [...FILE_SECTION_TITLES, DIRECTORY_SECTION_TITLE], (entry, title) =>
    title !== DIRECTORY_SECTION_TITLE ? expandPathGroup(entry) : entry.endsWith('/') ? [] : [entry],
  );
}

/**
 * The directories the ledgers rendered in `text` name for the files they had no room to list
 * (each ends in `/`): a file under one of them is named by its group.
 */
export function directoriesInRenderedLedger(text: string): string[] {
  return readEntries(text, [DIRECTORY_SECTION_TITLE], (entry) => (entry.endsWith('/') ? [entry] : []));
}

/** The entries of the sections titled `titles`, each read by `expand`, with the legend's root put back. */
function readEntries(
  text: string,
  titles: readonly string[],
  expand: (entry: string, title: string) => string[],
): string[] {
  const found = new Set<string>();
  let from = text.indexOf(LEDGER_HEADING);
  while (from !== -1) {
    const lines = text
      .slice(from + LEDGER_HEADING.length)
      .split('\n')
      .slice(1);
    let root: string | null = null;
    let title: string | null = null;
    for (const line of lines) {
      if (line.startsWith(ROOT_LEGEND_LEAD) && line.endsWith(ROOT_LEGEND_TAIL) && root === null) {
        root = line.slice(ROOT_LEGEND_LEAD.length, line.length - ROOT_LEGEND_TAIL.length);
        continue;
      }
      const entry = ENTRY.exec(line);
      if (entry) {
        if (title === null) continue;
        for (const path of expand(entry[1]!, title)) {
          found.add(root !== null && path.startsWith(ROOT_MARK) ? root + path.slice(ROOT_MARK.length) : path);
        }
        continue;
      }
      if (line.endsWith(':') && !line.startsWith('- ')) {
        title = titles.includes(line) ? line : null;
        continue;
      }
      break;
    }
    from = text.indexOf(LEDGER_HEADING, from + LEDGER_HEADING.length);
  }
  return [...found];
}
