/**
 * Steps 3 and 4 of the read-time fit (read-fit.ts): the oldest messages left out behind one
 * marker, and, when the newest turn alone is still over, that turn clamped down to the budget.
 */
import { isTurnStart } from './cut-point';
import { fitKeptMessages } from './fit';
import type { Message } from './model';
import type { ReadFitOptions } from './read-fit-options';
import { buildReadFitMarker } from './read-fit-marker';
import { messageTokens, storedTokens } from './tokens';

/** What {@link dropOldest} served. */
export interface Dropped {
  messages: Message[];
  dropped: number;
  clamped: number;
}

/**
 * Steps 3 and 4: the fewest oldest messages left out (behind one marker) that make the view fit,
 * the cut moved to the next user turn when one follows; failing that, the newest turn clamped.
 */
export function dropOldest(
  head: readonly Message[],
  tail: readonly Message[],
  pinned: (message: Message) => boolean,
  options: ReadFitOptions,
): Dropped {
  const budget = options.budgetTokens;
  const headTokens = storedTokens(head);
  const summaries = head.filter((message) => message.summary);
  // suffix[k]: tokens of tail[k..]; pinnedBefore[k]: tokens of the pinned messages in tail[..k).
  const suffix = new Array<number>(tail.length + 1).fill(0);
  for (let k = tail.length - 1; k >= 0; k--) suffix[k] = suffix[k + 1]! + messageTokens(tail[k]!);
  const pinnedBefore = new Array<number>(tail.length + 1).fill(0);
  for (let k = 0; k < tail.length; k++)
    pinnedBefore[k + 1] = pinnedBefore[k]! + (pinned(tail[k]!) ? messageTokens(tail[k]!) : 0);

  const servedAt = (k: number) => {
    const omitted = tail.slice(0, k).filter((message) => !pinned(message));
    const kept = tail.slice(k);
    const fixed = [...head, ...tail.slice(0, k).filter(pinned)];
    if (omitted.length === 0) return { fixed, kept, omitted: 0 };
    const marker = buildReadFitMarker({
      summaries,
      omitted,
      kept,
      budgetTokens: options.markerBudgetTokens,
      count: options.count.text,
    });
    return { fixed: [...fixed, marker], kept, omitted: omitted.length };
  };
  const fitsAt = (k: number) => {
    const served = servedAt(k);
    return storedTokens(served.fixed) + storedTokens(served.kept) <= budget ? served : null;
  };

  const latestTurn = lastIndexWhere(tail, isTurnStart);
  // Without the marker it does not fit before `first`: no marker is built there.
  let first = 1;
  while (first < tail.length && headTokens + pinnedBefore[first]! + suffix[first]! > budget) first++;
  const found = firstFitting(first, tail.length - 1, fitsAt);
  if (found !== null) {
    const k = found.index;
    const nextTurn = tail.findIndex((message, index) => index > k && isTurnStart(message));
    const atTurn = isTurnStart(tail[k]!) || nextTurn === -1 ? found.value : (fitsAt(nextTurn) ?? found.value);
    return { messages: [...atTurn.fixed, ...atTurn.kept], dropped: atTurn.omitted, clamped: 0 };
  }

  // Step 4: the newest turn (or less) clamped down to the budget, markers included.
  const clampedAt = (k: number): Dropped & { fits: boolean } => {
    const served = servedAt(k);
    const placeholders = served.kept.map((message) =>
      pinned(message) ? { ...message, parts: [] } : message,
    );
    const fixedTokens = storedTokens(served.fixed) + storedTokens(served.kept.filter(pinned));
    const fit = fitKeptMessages(placeholders, {
      fixedTokens,
      targetTokens: budget,
      limitTokens: budget,
      count: options.count,
    });
    return {
      messages: [...served.fixed, ...applyClamps(served.kept, fit.clamps, pinned)],
      dropped: served.omitted,
      clamped: fit.clamps.length,
      fits: fit.fits,
    };
  };
  if (tail.length === 0) return { messages: [...head], dropped: 0, clamped: 0 };
  const from = Math.max(0, latestTurn);
  const clamped = firstFitting(from, tail.length - 1, (k) => {
    const attempt = clampedAt(k);
    return attempt.fits ? attempt : null;
  });
  const { fits: _, ...best } = clamped?.value ?? clampedAt(tail.length - 1);
  return best;
}

/**
 * The smallest index in `[from, to]` where `attempt` gives a value, assuming that once it does,
 * it does for every later index too (leaving out more never makes a view larger, give or take
 * the marker's own count): galloping then halving, so a long view costs O(log n) attempts.
 * A non-monotone step only makes the answer leave out a few messages more; it always fits.
 */
function firstFitting<T>(
  from: number,
  to: number,
  attempt: (index: number) => T | null,
): { index: number; value: T } | null {
  let failed = from - 1;
  let found: { index: number; value: T } | null = null;
  for (let step = 1, index = from; index <= to; step *= 2) {
    const value = attempt(index);
    if (value !== null) {
      found = { index, value };
      break;
    }
    failed = index;
    if (index === to) break;
    index = Math.min(to, index + step);
  }
  if (found === null) return null;
  let [low, high] = [failed + 1, found.index - 1];
  while (low <= high) {
    const middle = Math.floor((low + high) / 2);
    const value = attempt(middle);
    if (value === null) low = middle + 1;
    else {
      found = { index: middle, value };
      high = middle - 1;
    }
  }
  return found;
}

/** The kept messages with fit.ts's clamps applied (pinned ones never are). */
function applyClamps(
  kept: readonly Message[],
  clamps: ReturnType<typeof fitKeptMessages>['clamps'],
  pinned: (message: Message) => boolean,
): Message[] {
  return kept.map((message) => {
    if (pinned(message)) return message;
    const own = clamps.filter((clamp) => clamp.messageId === message.id && clamp.seq === message.seq);
    if (own.length === 0) return message;
    const parts = message.parts.map(
      (part, index) => own.find((clamp) => clamp.index === index)?.part ?? part,
    );
    return { ...message, parts };
  });
}

function lastIndexWhere(messages: readonly Message[], test: (message: Message) => boolean): number {
  for (let index = messages.length - 1; index >= 0; index--) if (test(messages[index]!)) return index;
  return -1;
}
