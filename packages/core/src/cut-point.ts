/**
 * Where a compaction cuts: messages before the cut are summarised, messages from it on are kept.
 *
 * Opal: walk back from the newest message accumulating tokens until `keepRecentTokens` is
 * reached, then cut at the nearest user message at or after that point; when the point lies in
 * the last turn (no user message after it), cut there and let split-turn handling keep the turn
 * coherent. klaude-code cuts at the point itself (`cutAt: 'message'`). With `force` and no valid
 * cut, everything but the last 2 messages is compacted (Opal's emergency).
 *
 * A cut never separates a tool call from its result. Here a tool part holds both, so a message
 * boundary is safe unless a client left a call unfinished in one message and stored its result in
 * a later one under the same `callId`: cuts inside such a span are invalid, and no kept message
 * starts with an orphaned result.
 */
import { assertNever, type CompactionReason, type Message, type ModelInfo } from './model';
import type { Policy } from './policy';
import { countLeadingSummaryMessages } from './summary-messages';
import { messageTokens } from './tokens';
import { usableTokens } from './triggers';

/** Opal's fallback when no valid cut exists and `force` is set: keep this many messages. */
export const FORCED_KEEP_MESSAGES = 2;

export interface CutPointOptions {
  /** Tokens of recent history to keep verbatim. */
  keepRecentTokens: number;
  /** Emergency: when no valid cut exists, keep only the last 2 messages. */
  force?: boolean;
  /** `turn-start` (Opal, default): nearest user message at or after the point; `message` (klaude-code): the point itself. */
  cutAt?: Policy['cutAt'];
  /** Keep at least this many user messages (seed 002's `min_verbatim_exchanges`), moving the cut back. */
  minKeptUserTurns?: number;
}

/** How a cut was found. `mid-turn` cuts start the kept part with a non-user message (a split turn). */
export type CutKind = 'turn-start' | 'mid-turn' | 'forced';

export interface CutPoint {
  /** Index of the first kept message. Everything before it (after any previous summary) is compacted. */
  index: number;
  kind: CutKind;
  /** Stored tokens of the kept messages. */
  keptTokens: number;
}

/** A real user turn: a user message not written by a compaction. */
export function isTurnStart(message: Message): boolean {
  return message.role === 'user' && !message.summary;
}

/**
 * For cut candidates in `[from, messages.length)`: whether cutting there would separate a tool
 * call from its result. In this model a part carries both, so that only happens when a client
 * left a call unfinished (pending or running) in one message and stored its result in a later
 * one under the same `callId`: cutting between the two would leave the result without its call.
 * (Two finished parts with one id are two complete pairs, a duplicate the context validator
 * reports; no cut orphans either.) One pass reading each tool part's status; ids are only looked
 * up once an unfinished call was seen, which is rare.
 */
export function splitsToolCallPairs(messages: readonly Message[], from: number): (index: number) => boolean {
  const n = messages.length;
  let unfinishedCalls: Map<string, number> | null = null;
  const delta = new Int32Array(Math.max(0, n - from) + 1);
  for (let index = 0; index < n; index++) {
    for (const part of messages[index]!.parts) {
      if (part.type !== 'tool') continue;
      const callAt = unfinishedCalls?.get(part.callId);
      if (callAt !== undefined && callAt < index && index >= from) {
        // Cutting anywhere in (callAt, index] orphans this result.
        delta[Math.max(callAt + 1, from) - from]! += 1;
        delta[index + 1 - from]! -= 1;
      }
      if ((part.status === 'pending' || part.status === 'running') && callAt === undefined) {
        (unfinishedCalls ??= new Map()).set(part.callId, index);
      }
    }
  }
  if (unfinishedCalls === null) return () => false;
  const inside = new Uint8Array(Math.max(0, n - from));
  let open = 0;
  for (let offset = 0; offset < n - from; offset++) {
    open += delta[offset]!;
    inside[offset] = open > 0 ? 1 : 0;
  }
  return (index) => index >= from && index < n && inside[index - from] === 1;
}

function keptTokensFrom(messages: readonly Message[], index: number): number {
  let total = 0;
  for (let i = index; i < messages.length; i++) total += messageTokens(messages[i]!);
  return total;
}

/** Where accumulated tokens from the end first reach the budget, or `null` if they never do. */
function budgetPoint(
  messages: readonly Message[],
  start: number,
  keepRecentTokens: number,
): { index: number; keptTokens: number } | null {
  let accumulated = 0;
  for (let index = messages.length - 1; index >= start; index--) {
    accumulated += messageTokens(messages[index]!);
    if (accumulated >= keepRecentTokens) return { index, keptTokens: accumulated };
  }
  return null;
}

/** Tokens kept by a cut at `index`, from the tokens kept by a cut at `known` (walks only the gap). */
function keptTokensAt(
  messages: readonly Message[],
  index: number,
  known: number,
  knownTokens: number,
): number {
  let total = knownTokens;
  for (let i = known; i < index; i++) total -= messageTokens(messages[i]!);
  for (let i = index; i < known; i++) total += messageTokens(messages[i]!);
  return total;
}

/** Index of the `count`-th user turn from the end, `-1` when there are fewer (0 → no constraint). */
function nthLastTurnStart(messages: readonly Message[], count: number): number {
  if (count <= 0) return messages.length;
  let seen = 0;
  for (let index = messages.length - 1; index >= 0; index--) {
    if (isTurnStart(messages[index]!) && ++seen === count) return index;
  }
  return -1;
}

function naturalCut(messages: readonly Message[], start: number, options: CutPointOptions): CutPoint | null {
  const budget = budgetPoint(messages, start, options.keepRecentTokens);
  if (budget === null) return null;
  const point = budget.index;
  // Seed 002's minimum exchanges: the cut may not pass the N-th user turn from the end.
  const latest = nthLastTurnStart(messages, options.minKeptUserTurns ?? 0);
  if (latest <= start) return null;
  const splits = splitsToolCallPairs(messages, point);

  // The nearest valid cut at or after the point; when it compacts nothing new (Opal: a cut at
  // index 0), there is no cut: moving further would keep less than the budget asks.
  const firstFromPoint = (accept: (i: number) => boolean): number => {
    for (let i = point; i < messages.length; i++) if (accept(i)) return i;
    return -1;
  };
  let index =
    (options.cutAt ?? 'turn-start') === 'turn-start'
      ? firstFromPoint((i) => isTurnStart(messages[i]!) && !splits(i))
      : -1;
  // In the last turn (no user message after the point), or klaude-code's mode: the first valid message.
  if (index === -1) index = firstFromPoint((i) => !splits(i));
  if (index === -1 || index > latest) {
    // Nothing valid after the point, or the cut would drop required turns: the latest valid turn
    // start before them.
    const wideSplits = splitsToolCallPairs(messages, start + 1);
    index = -1;
    for (let i = Math.min(latest, messages.length - 1); i > start && index === -1; i--) {
      if (isTurnStart(messages[i]!) && !wideSplits(i)) index = i;
    }
  }
  if (index <= start) return null;
  const kind: CutKind = isTurnStart(messages[index]!) ? 'turn-start' : 'mid-turn';
  return { index, kind, keptTokens: keptTokensAt(messages, index, point, budget.keptTokens) };
}

/** Opal's force: keep the last 2 messages (or the nearest valid cut, preferring to keep fewer). */
function forcedCut(messages: readonly Message[], start: number): CutPoint | null {
  const target = messages.length - FORCED_KEEP_MESSAGES;
  if (target <= start) return null;
  const splits = splitsToolCallPairs(messages, start + 1);
  const candidates: number[] = [];
  for (let i = target; i < messages.length; i++) candidates.push(i);
  for (let i = target - 1; i > start; i--) candidates.push(i);
  const index = candidates.find((i) => !splits(i));
  if (index === undefined) return null;
  return { index, kind: 'forced', keptTokens: keptTokensFrom(messages, index) };
}

/**
 * Find the cut in a context view (the previous summary first, then the kept and newer messages).
 * `null` when there is nothing worth compacting: everything fits the budget, or the only valid
 * cut would compact nothing but the previous summary. With `force`, such a view still loses all
 * but its last 2 messages.
 */
export function findCutPoint(messages: readonly Message[], options: CutPointOptions): CutPoint | null {
  const start = countLeadingSummaryMessages(messages);
  const natural = naturalCut(messages, start, options);
  if (natural !== null || !options.force) return natural;
  return forcedCut(messages, start);
}

/**
 * Tokens to keep verbatim for a compaction: an explicit per-request `override` wins; in topic
 * mode the verbatim window (seed 002); else auto keeps `autoRatio` × window (Opal: window / 4),
 * an overflow emergency `emergencyRatio` × window (window / 5), and a manual request
 * `manualTokens` (20,000), or the auto budget when that is smaller or `manualTokens` is null
 * (klaude-code uses one budget). Ratio budgets are clamped to the policy's `minTokens` /
 * `maxTokens` (klaude-code: min(20000, max(4096, 35 %))) and never exceed the usable input.
 * An unlimited window (0) falls back to the manual budget.
 */
export function keepRecentTokensFor(
  reason: CompactionReason,
  model: ModelInfo,
  policy: Pick<Policy, 'keepRecent' | 'strategy' | 'topic' | 'trigger'>,
  override?: number | null,
): number {
  if (override !== undefined && override !== null) return Math.max(0, Math.floor(override));
  if (policy.strategy === 'topic') return policy.topic.verbatimWindowTokens;
  const { keepRecent } = policy;
  const fallback = keepRecent.manualTokens ?? keepRecent.maxTokens ?? 20_000;
  const usable = usableTokens(model, policy);
  const ratioBudget = (ratio: number): number => {
    if (model.contextWindow <= 0) return fallback;
    const clamped = Math.max(keepRecent.minTokens, Math.floor(model.contextWindow * ratio));
    const capped = keepRecent.maxTokens === null ? clamped : Math.min(clamped, keepRecent.maxTokens);
    return usable === null ? capped : Math.min(capped, usable);
  };
  switch (reason) {
    case 'auto':
      return ratioBudget(keepRecent.autoRatio);
    case 'overflow':
      return ratioBudget(keepRecent.emergencyRatio);
    case 'manual': {
      const auto = ratioBudget(keepRecent.autoRatio);
      return keepRecent.manualTokens === null ? auto : Math.min(keepRecent.manualTokens, auto);
    }
    default:
      return assertNever(reason, 'compaction reason');
  }
}

/** Whether a compaction for this reason is forced (Opal: overflow emergencies are). */
export function isForced(reason: CompactionReason): boolean {
  return reason === 'overflow';
}
