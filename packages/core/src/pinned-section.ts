/**
 * The pinned section: a delimited block at the end of a summary that holds the user's own words
 * a summary must never lose (the goal, the constraints, and what the model's text missed), one
 * item a line. The next compaction finds it in the previous summary and carries its goal and
 * constraints forward (they are in no later covered range), and replaces it instead of adding a
 * second one.
 *
 * ```
 * <pinned>
 * The user's own words, kept verbatim across compactions:
 * - Goal: Add CSV export to the reports page.
 * - Constraint: Never run the migration against production.
 * - Constraint (stated 3 times): Only change files under src/.
 * - (3 earlier constraints no longer listed)
 * - Instructions: focus on the export code
 * - Latest request: Now add a test for an empty report.
 * </pinned>
 * ```
 *
 * While the user has made one request only, it is both the goal and the latest request, and one
 * line says so (`- Goal and latest request: …`), read back as both.
 *
 * A constraint the user stated more than once says how often: the count ranks it (the most
 * repeated are listed first when not all fit) and must survive the next compaction with it.
 *
 * Items are single lines (whitespace collapsed) and cannot close or open a block: `<pinned`,
 * `</pinned` and the file-op tags inside an item are written with `‹` instead of `<`.
 */

export const PINNED_OPEN = '<pinned>';
export const PINNED_CLOSE = '</pinned>';
const PINNED_HEADER = "The user's own words, kept verbatim across compactions:";

/** What a pinned section lists. `constraintsNotListed` counts constraints the bounds dropped, ever. */
export interface PinnedItems {
  goal: string | null;
  /** Oldest first. */
  constraints: string[];
  /** How many times each constraint was stated (same index); 1 each when absent. */
  constraintCounts?: number[];
  constraintsNotListed: number;
  instructions: string | null;
  latestRequest: string | null;
}

export function emptyPinnedItems(): PinnedItems {
  return { goal: null, constraints: [], constraintsNotListed: 0, instructions: null, latestRequest: null };
}

const LABELS = {
  goal: 'Goal',
  goalAndLatest: 'Goal and latest request',
  constraint: 'Constraint',
  instructions: 'Instructions',
  latestRequest: 'Latest request',
} as const;

/** A constraint's label: with how often it was stated, when more than once. */
function constraintLabel(count = 1): string {
  return count > 1 ? `${LABELS.constraint} (stated ${count} times)` : LABELS.constraint;
}

const CONSTRAINT_LABEL = /^Constraint(?: \(stated (\d{1,9}) times\))?$/;

/**
 * Characters a line adds around its item: `- Label: ` and the newline (for a constraint, with its
 * count when it was stated more than once).
 */
export function pinnedLabelChars(
  kind: 'goal' | 'constraints' | 'instructions' | 'latestRequest',
  count = 1,
): number {
  const label = kind === 'constraints' ? constraintLabel(count) : LABELS[kind];
  return label.length + 5;
}

const NOT_LISTED = /^\((\d+) earlier constraints? no longer listed\)$/;
const RESERVED_TAG = /<(\s*\/?\s*)(pinned|read-files|modified-files)\b/gi;

/** One line, and no tag that could end the section or open a file-op block. */
export function pinnedItemText(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(RESERVED_TAG, '‹$1$2');
}

/** The section for `items`, or `''` when there is nothing to pin. Items are rendered as given. */
export function renderPinnedSection(items: PinnedItems): string {
  const lines: string[] = [];
  const line = (label: string, text: string | null) => {
    if (text !== null && text.trim() !== '') lines.push(`- ${label}: ${pinnedItemText(text)}`);
  };
  // The user's only request so far is both: one line, read back as both.
  const goalIsLatest = items.goal !== null && items.goal === items.latestRequest;
  line(goalIsLatest ? LABELS.goalAndLatest : LABELS.goal, items.goal);
  items.constraints.forEach((constraint, index) =>
    line(constraintLabel(items.constraintCounts?.[index]), constraint),
  );
  if (items.constraintsNotListed > 0) {
    const n = items.constraintsNotListed;
    lines.push(`- (${n} earlier constraint${n === 1 ? '' : 's'} no longer listed)`);
  }
  line(LABELS.instructions, items.instructions);
  if (!goalIsLatest) line(LABELS.latestRequest, items.latestRequest);
  if (lines.length === 0) return '';
  return [PINNED_OPEN, PINNED_HEADER, ...lines, PINNED_CLOSE].join('\n');
}

/** Exactly the blocks {@link renderPinnedSection} writes (tags on their own lines). */
const SECTION = /^<pinned>\n([\s\S]*?)\n<\/pinned>$/gm;

/**
 * The items of every pinned section in `text` (a previous summary), merged in order: the last
 * goal wins, constraints are concatenated. Lines it does not know are ignored.
 */
export function parsePinnedSections(text: string): PinnedItems {
  const items = emptyPinnedItems();
  for (const match of text.matchAll(SECTION)) {
    for (const raw of (match[1] ?? '').split('\n')) {
      const line = raw.replace(/^- /, '').trim();
      const notListed = NOT_LISTED.exec(line);
      if (notListed) {
        items.constraintsNotListed += Number(notListed[1]);
        continue;
      }
      const colon = line.indexOf(': ');
      if (colon < 0) continue;
      const label = line.slice(0, colon);
      const value = line.slice(colon + 2).trim();
      if (value === '') continue;
      const constraint = CONSTRAINT_LABEL.exec(label);
      if (label === LABELS.goal) items.goal = value;
      else if (label === LABELS.goalAndLatest) {
        items.goal = value;
        items.latestRequest = value;
      } else if (constraint) {
        items.constraints.push(value);
        (items.constraintCounts ??= []).push(Number(constraint[1] ?? 1));
      } else if (label === LABELS.instructions) items.instructions = value;
      else if (label === LABELS.latestRequest) items.latestRequest = value;
    }
  }
  return items;
}

/**
 * Anything that looks like a pinned section or its tags, in any case or spacing, removed: a model
 * that copied the previous section (or wrote one of its own) must not leave a second section, nor
 * one the next compaction would read as the user's words. A copy may keep the backslash the
 * summarizer's prompt escapes tags with (core prompt-data.ts): it goes too.
 */
export function stripPinnedSections(text: string): string {
  return withoutMatches(
    withoutMatches(text, /<\s*pinned\b[^>]*>[\s\S]*?\\*<\s*\/\s*pinned\s*>/gi),
    /<\s*\/?\s*pinned\b[^>]*>/gi,
  )
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * `text` without the matches of `pattern` (global) and the backslashes right before each. Found
 * by walking back from each match: a pattern that began with `\\*` would rescan a long run of
 * backslashes from every one of them (quadratic, on text a model wrote).
 */
function withoutMatches(text: string, pattern: RegExp): string {
  let kept = '';
  let from = 0;
  for (const match of text.matchAll(pattern)) {
    let start = match.index;
    while (start > from && text[start - 1] === '\\') start--;
    kept += text.slice(from, start);
    from = match.index + match[0].length;
  }
  return kept + text.slice(from);
}
