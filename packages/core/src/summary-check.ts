/**
 * The deterministic check of a summary, run after the model answers and on the truncate text:
 * the summary must carry, verbatim, the user's goal (their first request), every constraint
 * sentence they stated, the compaction request's instructions, their latest request when the
 * compaction covered it, and every touched file. A model that paraphrases or drops one is not
 * trusted: the missing items are appended in the pinned section (pinned-section.ts), and the
 * compaction records how many of each kind it repaired (numbers only, never the text).
 *
 * The goal, the constraints and the latest request (when the kept messages hold no newer one)
 * are pinned whether the model kept them or not: they must survive every later compaction too,
 * and after this one they are in no covered range any more, so the pinned section is what
 * carries them (the next compaction reads it back; the latest request until a newer one comes).
 * The instructions matter to this summary only: pinned when the model's text misses them. Files
 * are carried by the `<read-files>` / `<modified-files>` blocks, rebuilt from metadata each time.
 *
 * A user message's words are what it says around the text its agent harness wrote into it
 * (harness-text.ts): a message that is only harness text (environment context, AGENTS.md
 * instructions, a local command's output, an image note) is no request, so it is never the goal,
 * the latest request or a source of constraints; it stays in the history as context.
 *
 * Bounds, so a session with hundreds of constraint sentences still gets a summary that fits:
 * each item at most {@link PINNED_ITEM_MAX_CHARS}; the section within
 * {@link PINNED_BUDGET_SHARE} of the summary's token budget, filled goal → instructions →
 * constraints by rank (most-repeated, then newest: constraint-ranking.ts) while they fit. The
 * latest request is whole on an allowance of its own (summary-check-latest.ts), and while it is
 * the goal too, the goal's line is it. What the bounds leave out is counted in the section ("(N earlier constraints no longer
 * listed)") and returned by the check, best-ranked first, for whatever lists it elsewhere.
 */
import { isContinuationMessage } from './continuation';
import { fitConstraints, rankConstraints } from './constraint-ranking';
import { constraintSentences } from './constraints';
import { type FileOps } from './file-ops';
import { withFileOps } from './file-ops-render';
import { userWords } from './harness-text';
import { clipItem, matchKey } from './match-key';
import type { Message } from './model';
import { fitLatestRequest, latestRequestMaxChars } from './summary-check-latest';
import {
  parsePinnedSections,
  pinnedItemText,
  pinnedLabelChars,
  renderPinnedSection,
  stripPinnedSections,
  type PinnedItems,
} from './pinned-section';
import { countLeadingSummaryMessages, extractPreviousSummary } from './summary-messages';
import { CHARS_PER_TOKEN } from './tokens';

/**
 * Characters an item keeps. A first request is often a pasted paragraph or spec; its first 1,000
 * characters (about 250 tokens) state the task, the rest is detail the summary itself carries.
 */
export const PINNED_ITEM_MAX_CHARS = 1_000;

export { clipItem, matchKey } from './match-key';
export {
  fitLatestRequest,
  LATEST_REQUEST_BUDGET_SHARE,
  latestRequestMarker,
  latestRequestMaxChars,
} from './summary-check-latest';

/**
 * Share of the summary's token budget the pinned section may take. The model's summary is asked
 * to fit the budget; the section comes on top, so this bounds the total at 1.25 × the budget.
 */
export const PINNED_BUDGET_SHARE = 0.25;

/** Below this many characters left, an instruction or request is dropped rather than cut to a stub. */
const MIN_CLIPPED_CHARS = 120;

/** What a summary of a covered range must carry, before the bounds. */
export interface SummaryFacts {
  goal: string | null;
  /** Oldest first (by their newest statement), each once. */
  constraints: string[];
  /** How many times each of `constraints` was stated (same index); 1 each when absent. */
  constraintCounts?: number[];
  /** Constraints earlier compactions' bounds dropped (carried in their pinned sections). */
  constraintsNotListed: number;
  instructions: string | null;
  latestRequest: string | null;
}

/** Per kind of fact: how many. */
export interface FactCounts {
  goal: number;
  constraints: number;
  instructions: number;
  latestRequest: number;
}

/** What the check found and did, in numbers only (step records and compaction details hold no text). */
export interface SummaryRepair {
  /** Facts the summary had to carry. */
  required: FactCounts;
  /** Of those, the ones the summary's own text lacked verbatim. */
  missing: FactCounts;
  /** Of the missing ones, those the pinned section now carries (the others fell to the bounds). */
  repaired: FactCounts;
  /** Facts the pinned section lists (the goal and constraints always, others when missing). */
  pinned: FactCounts;
  /** Facts the bounds left out of the section (constraints: the oldest). */
  dropped: FactCounts;
  /** Touched files the file-op blocks list, and those beyond their bound (counted, not listed). */
  files: { listed: number; notListed: number };
}

export interface SummaryCheck {
  /** The summary text, any pinned section it had replaced by the checked one, then the file-op blocks. */
  text: string;
  repair: SummaryRepair;
  /** The constraints the section's budget left out, best-ranked first (their text, for recall to list). */
  unlistedConstraints: string[];
}

/**
 * A user message the user wrote: not a summary, marker or synthetic continuation, with words of
 * the user's own (text that is all harness-written is not a request).
 */
export function isUserRequest(message: Message): boolean {
  return (
    message.role === 'user' &&
    !message.summary &&
    !isContinuationMessage(message) &&
    requestText(message) !== ''
  );
}

/** The user's own words in a message: its text parts without what the harness wrote into them. */
function requestText(message: Message): string {
  return userWords(message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n'));
}

export interface CollectFactsOptions {
  /** The compaction request's instructions. */
  instructions?: string | null;
  /**
   * The messages kept after the boundary. The latest request is required only when none of them
   * is a user request; when not given, the covered range's last request is taken as the latest.
   */
  kept?: readonly Message[];
  /**
   * A summary that stands for the messages before `covered` (a chunked summary's paid-for part):
   * read like a leading summary message, so the range's first request is not taken as the goal.
   */
  previousSummary?: string | null;
}

/**
 * The facts `covered` (a compaction's range, leading previous-summary messages included) must
 * keep. The goal is the first user request; after an earlier compaction it is the one that
 * compaction's pinned section carries (none, for a summary written without one). Constraints are
 * the previous section's, then those of every user request in the range, each once at its newest
 * position with the number of times it was stated.
 */
export function collectSummaryFacts(
  covered: readonly Message[],
  options: CollectFactsOptions = {},
): SummaryFacts {
  const leading = countLeadingSummaryMessages(covered);
  const earlier = [options.previousSummary, leading > 0 ? extractPreviousSummary(covered) : null]
    .map((text) => text?.trim() ?? '')
    .filter((text) => text !== '');
  // After a summary the goal is only what its pinned section carries: the range's first request is not it.
  const previous = earlier.length > 0 || leading > 0 ? parsePinnedSections(earlier.join('\n\n')) : null;
  const requests = covered.slice(leading).filter(isUserRequest).map(requestText);
  const goal = previous ? previous.goal : (requests[0] ?? null);

  // A previous section's constraints keep the counts it carried; each new statement counts once.
  const stated = rankConstraints(
    [
      ...(previous?.constraints ?? []),
      ...requests.flatMap((text) => constraintSentences(text).map(pinnedItemText)),
    ],
    previous?.constraintCounts ?? [],
  ).sort((a, b) => a.newest - b.newest);
  // The newest request the range holds, else the one the previous section carried (a long task
  // runs through many compactions after its request); none when the kept messages hold a newer one.
  const last = requests.at(-1) ?? previous?.latestRequest ?? undefined;
  const latestCovered = !(options.kept ?? []).some(isUserRequest);
  const latestRequest = last !== undefined && latestCovered ? last : null;
  const instructions = options.instructions?.trim() || null;
  return {
    goal,
    constraints: stated.map((c) => c.text),
    constraintCounts: stated.map((c) => c.count),
    constraintsNotListed: previous?.constraintsNotListed ?? 0,
    instructions,
    latestRequest,
  };
}

export interface VerifyOptions {
  /** The summary's output budget in tokens; the section gets {@link PINNED_BUDGET_SHARE} of it. */
  budgetTokens: number;
  /** The compaction's cumulative file ops: their blocks are appended (and counted). */
  fileOps?: FileOps | null;
}

const zero = (): FactCounts => ({ goal: 0, constraints: 0, instructions: 0, latestRequest: 0 });

/**
 * Checks `summary` against `facts` and returns the summary with its pinned section (any section
 * or tag the text had is replaced) and the file-op blocks. Idempotent: checking the result again
 * gives the same text, so a summary carried through several compactions never lists an item twice.
 */
export function verifySummary(summary: string, facts: SummaryFacts, options: VerifyOptions): SummaryCheck {
  const body = stripPinnedSections(summary);
  const bodyKey = matchKey(body);
  const required = zero();
  const missing = zero();
  const lacking: Array<[keyof FactCounts, string]> = [];
  /** Counts the item; true when the body lacks it (as far as the section would list it). */
  const absent = (kind: keyof FactCounts, item: string | null): boolean => {
    if (item === null) return false;
    required[kind] += 1;
    const key = matchKey(clipItem(item, PINNED_ITEM_MAX_CHARS));
    if (bodyKey.includes(key)) return false;
    missing[kind] += 1;
    lacking.push([kind, key]);
    return true;
  };
  absent('goal', facts.goal);
  for (const constraint of facts.constraints) absent('constraints', constraint);
  const instructions = absent('instructions', facts.instructions) ? facts.instructions : null;
  // The latest request is pinned whether the model kept it or not, like the goal: the next
  // compaction reads it back from the section while the agent is still working on it.
  absent('latestRequest', facts.latestRequest);
  const { items, dropped, unlisted } = boundedItems(
    facts,
    instructions,
    facts.latestRequest,
    options.budgetTokens,
  );
  const section = renderPinnedSection(items);
  const sectionKey = matchKey(section);
  const repaired = zero();
  for (const [kind, key] of lacking) if (sectionKey.includes(key)) repaired[kind] += 1;
  const fileOps = options.fileOps ?? null;
  const text = withFileOps([body, section].filter((part) => part !== '').join('\n\n'), fileOps);
  return {
    text,
    repair: {
      required,
      missing,
      repaired,
      pinned: {
        goal: items.goal === null ? 0 : 1,
        constraints: items.constraints.length,
        instructions: items.instructions === null ? 0 : 1,
        latestRequest: items.latestRequest === null ? 0 : 1,
      },
      dropped,
      files: {
        listed: (fileOps?.readFiles.length ?? 0) + (fileOps?.modifiedFiles.length ?? 0),
        notListed: (fileOps?.readFilesOmitted ?? 0) + (fileOps?.modifiedFilesOmitted ?? 0),
      },
    },
    unlistedConstraints: unlisted,
  };
}

/** Characters of the section around its items: tags, header line, the dropped-constraints line. */
const SECTION_OVERHEAD_CHARS = 140;

/**
 * The section's items within the bounds, and what the bounds left out. Each item costs its text
 * and its label; the section's frame is taken off the budget first.
 */
function boundedItems(
  facts: SummaryFacts,
  instructions: string | null,
  latestRequest: string | null,
  budgetTokens: number,
): { items: PinnedItems; dropped: FactCounts; unlisted: string[] } {
  const budget = Math.floor(budgetTokens * PINNED_BUDGET_SHARE * CHARS_PER_TOKEN);
  let left = Math.max(0, budget - SECTION_OVERHEAD_CHARS);
  const dropped = zero();
  const take = (kind: 'goal' | 'instructions', item: string | null): string | null => {
    if (item === null) return null;
    const label = pinnedLabelChars(kind);
    // The goal is never dropped: with no room left it still keeps its opening.
    const room = Math.min(
      PINNED_ITEM_MAX_CHARS,
      kind === 'goal' ? Math.max(left - label, MIN_CLIPPED_CHARS) : left - label,
    );
    if (room < Math.min(MIN_CLIPPED_CHARS, pinnedItemText(item).length)) {
      dropped[kind] += 1;
      return null;
    }
    const clipped = clipItem(item, room);
    left = Math.max(0, left - label - clipped.length);
    return clipped;
  };
  // The latest request has an allowance of its own (summary-check-latest.ts); while it is the
  // goal too, the goal's line is that request and costs the section nothing.
  const latestMax = latestRequestMaxChars(budgetTokens);
  const pinnedRequest = latestRequest === null ? null : fitLatestRequest(latestRequest, latestMax);
  const goalIsLatest =
    facts.goal !== null && latestRequest !== null && matchKey(facts.goal) === matchKey(latestRequest);
  const goal = goalIsLatest ? pinnedRequest : take('goal', facts.goal);
  const pinnedInstructions = take('instructions', instructions);

  // Constraints the goal holds verbatim are carried by it; the rest by rank, while they fit.
  const goalKey = goal === null ? null : matchKey(goal);
  const counts = facts.constraintCounts ?? [];
  const own = facts.constraints.flatMap((text, index) =>
    goalKey !== null && goalKey.includes(matchKey(text)) ? [] : [{ text, count: counts[index] ?? 1 }],
  );
  const fit = fitConstraints(
    rankConstraints(
      own.map((c) => c.text),
      own.map((c) => c.count),
    ),
    left,
    {
      itemMaxChars: PINNED_ITEM_MAX_CHARS,
      lineChars: (constraint) => pinnedLabelChars('constraints', constraint.count),
    },
  );
  const constraints = fit.listed.map((c) => c.text);
  dropped.constraints = fit.notListed.length;
  return {
    items: {
      goal,
      constraints,
      constraintCounts: fit.listed.map((c) => c.count),
      constraintsNotListed: facts.constraintsNotListed + dropped.constraints,
      instructions: pinnedInstructions,
      latestRequest: pinnedRequest,
    },
    dropped,
    unlisted: fit.notListed.map((c) => c.text),
  };
}
