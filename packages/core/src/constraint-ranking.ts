/**
 * Which of the user's constraints a pinned section lists when not all of them fit. A fixed count
 * (the newest twenty) dropped constraints a user had stated again and again and kept room unused
 * when they were short; the section's own character budget is the bound that matters.
 *
 * Rank: most-repeated first, then newest. A user restates what they care about most, usually
 * after the agent broke it; among constraints stated as often, the newest is the one in force.
 * A constraint is one item however often it was stated (compared as {@link matchKey}), with the
 * wording of its newest statement. What does not fit is returned too, in rank order, so it can
 * be listed elsewhere (the section counts it; recall can list it).
 */
import { clipItem, matchKey } from './match-key';

export interface RankedConstraint {
  /** The newest statement's wording. */
  text: string;
  /** How many times it was stated (statements with the same {@link matchKey}). */
  count: number;
  /** Position of its newest statement in the input (higher is newer). */
  newest: number;
}

/**
 * Each constraint of `statements` (oldest first, repeats included) once, best-ranked first.
 * `counts`, when given, says how many statements each entry stands for (default 1).
 */
export function rankConstraints(
  statements: readonly string[],
  counts: readonly number[] = [],
): RankedConstraint[] {
  const byKey = new Map<string, RankedConstraint>();
  statements.forEach((text, index) => {
    const key = matchKey(text);
    const seen = byKey.get(key);
    const count = (seen?.count ?? 0) + Math.max(1, counts[index] ?? 1);
    byKey.set(key, { text, count, newest: index });
  });
  return [...byKey.values()].sort((a, b) => b.count - a.count || b.newest - a.newest);
}

export interface ConstraintFit {
  /** The constraints that fit, clipped to the item bound, oldest first (the order they were stated in). */
  listed: RankedConstraint[];
  /** The ones that did not fit, best-ranked first, unclipped. */
  notListed: RankedConstraint[];
  /** Characters the listed ones take, their lines' labels included. */
  chars: number;
}

export interface ConstraintFitOptions {
  /** Characters an item keeps at most (longer ones are clipped with `…`). */
  itemMaxChars: number;
  /** Characters a listed item's line adds around its text (label, newline). */
  lineChars: (constraint: RankedConstraint) => number;
}

/**
 * The best-ranked constraints that fit in `budgetChars`, taken in rank order; one that does not
 * fit is passed over for the next, so a long low-value item never leaves the room unused.
 */
export function fitConstraints(
  ranked: readonly RankedConstraint[],
  budgetChars: number,
  options: ConstraintFitOptions,
): ConstraintFit {
  const listed: RankedConstraint[] = [];
  const notListed: RankedConstraint[] = [];
  let left = Math.max(0, budgetChars);
  for (const constraint of ranked) {
    const text = clipItem(constraint.text, options.itemMaxChars);
    const cost = options.lineChars(constraint) + text.length;
    if (cost > left) {
      notListed.push(constraint);
      continue;
    }
    listed.push({ ...constraint, text });
    left -= cost;
  }
  listed.sort((a, b) => a.newest - b.newest);
  return { listed, notListed, chars: Math.max(0, budgetChars) - left };
}
