/**
 * How much of what an agent should know a context still holds: an item is **present** when its
 * text is a verbatim substring of the context once whitespace is collapsed on both sides (no
 * word-bag matching: a paraphrase is not the path, the command or the user's sentence; a path
 * the session ledger lists grouped or under its root legend counts, read back exactly), and
 * **recoverable** when it is missing but a recall search (or the ledger's `kind=` listing) returns
 * a passage holding it verbatim under the same rule. Pure but for the recall function passed in.
 */
import { collapseWhitespace, holdsVerbatim, pathsInRenderedLedger } from '@compactor/core';
import { SURVIVAL_CLASSES, type SurvivalClass, type SurvivalItems } from './items';

export { collapseWhitespace };

/** A context's text, normalised once, to test many items against. */
export interface ContextText {
  readonly text: string;
  /** The paths a rendered ledger in it names, its groups and root legend read back. */
  readonly ledgerPaths: ReadonlySet<string>;
}

export function contextText(parts: readonly string[]): ContextText {
  const raw = parts.join('\n');
  return { text: collapseWhitespace(raw), ledgerPaths: new Set(pathsInRenderedLedger(raw)) };
}

/** Core's verbatim test, the one the replay's probes count by. */
export function isPresent(context: ContextText, item: string): boolean {
  return holdsVerbatim(context, item);
}

/**
 * A path is named when it is there verbatim, or when the session ledger's block lists it under
 * its directory (`dir/{a.ts, b.ts}`) or under the root its legend spells out (`…/dir/a.ts`):
 * core reads those back exactly (`pathsInRenderedLedger`; the renderer never groups a path
 * whose own characters would make the reading ambiguous).
 */
export function isPathNamed(context: ContextText, path: string): boolean {
  return context.ledgerPaths.has(path) || isPresent(context, path);
}

/** Counts of one class at one compaction: items, present, and recovered among the missing. */
export interface ClassCount {
  total: number;
  present: number;
  recoverable: number;
}

export type SurvivalCounts = Record<SurvivalClass, ClassCount> & { modifiedFiles: ClassCount };

const emptyCount = (): ClassCount => ({ total: 0, present: 0, recoverable: 0 });

export function emptyCounts(): SurvivalCounts {
  return {
    files: emptyCount(),
    commands: emptyCount(),
    facts: emptyCount(),
    constraints: emptyCount(),
    latest: emptyCount(),
    modifiedFiles: emptyCount(),
  };
}

/** Whether recall finds an item the context lacks; `null` for a system without recall. */
export type RecallCheck = ((kind: SurvivalClass, item: string) => Promise<boolean>) | null;

/** What a context keeps of `items`, each missing one looked up through `recall`. */
export async function countSurvival(
  items: SurvivalItems,
  context: ContextText,
  recall: RecallCheck,
  onMissing?: (key: keyof SurvivalCounts, item: string, recoverable: boolean) => void,
): Promise<SurvivalCounts> {
  const counts = emptyCounts();
  const classes: [keyof SurvivalCounts, SurvivalClass, readonly string[]][] = [
    ...SURVIVAL_CLASSES.map((c) => [c, c, items[c]] as [SurvivalClass, SurvivalClass, string[]]),
    ['modifiedFiles', 'files', items.modifiedFiles],
  ];
  for (const [key, kind, list] of classes) {
    const count = counts[key];
    for (const item of list) {
      count.total++;
      const named = kind === 'files' ? isPathNamed(context, item) : isPresent(context, item);
      if (named) {
        count.present++;
        continue;
      }
      const recoverable = recall !== null && (await recall(kind, item));
      if (recoverable) count.recoverable++;
      onMissing?.(key, item, recoverable);
    }
  }
  return counts;
}

/** Sums counts (over compactions, transcripts). */
export function addCounts(into: SurvivalCounts, more: SurvivalCounts): SurvivalCounts {
  for (const key of Object.keys(into) as (keyof SurvivalCounts)[]) {
    into[key].total += more[key].total;
    into[key].present += more[key].present;
    into[key].recoverable += more[key].recoverable;
  }
  return into;
}

/** `present % / recoverable %` of one class (`–` when there was nothing to keep). */
export function shareCell(count: ClassCount): string {
  if (count.total === 0) return '–';
  const pct = (n: number) => `${Math.round((100 * n) / count.total)}`;
  return `${pct(count.present)} / ${pct(count.recoverable)}`;
}
