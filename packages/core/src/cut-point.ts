/**
 * Where a compaction cuts: messages before the cut are summarised, messages from it on are kept.
 *
 * Opal: walk back from the newest message accumulating tokens until they exceed
 * `keepRecentTokens` (klaude-code: until they reach it; `cutWhen`), then cut at the nearest user
 * message at or after that point; when the point lies in
 * the last turn (no user message after it), cut there and let split-turn handling keep the turn
 * coherent. klaude-code cuts at the point itself (`cutAt: 'message'`). With `force` and no valid
 * cut, everything but the last 2 messages is compacted (Opal's emergency).
 *
 * A cut never separates a tool call from its result: a tool part always holds both (model.ts
 * `ToolPart`; the API rejects a result stored apart from its call), so every message boundary
 * is safe and no kept message can start with an orphaned result.
 */
import { assertNever, type CompactionReason, type Message, type ModelInfo } from './model';
import { DEFAULT_KEEP_RECENT_TOKENS, type Policy } from './policy';
import { countLeadingSummaryMessages } from './summary-messages';
import { TOKENIZER_MEASURE, type TokenMeasure } from './token-measure';
import { keepCeilingTokens } from './budgets';

/** Opal's fallback when no valid cut exists and `force` is set: keep this many messages. */
export const FORCED_KEEP_MESSAGES = 2;

/** Rules for {@link findCutPoint}; `keepRecentTokens` usually comes from {@link keepRecentTokensFor}. */
export interface CutPointOptions {
  /** Tokens of recent history to keep verbatim. */
  keepRecentTokens: number;
  /** Emergency: when no valid cut exists, keep only the last 2 messages. */
  force?: boolean;
  /** `turn-start` (Opal, default): nearest user message at or after the point; `message` (klaude-code): the point itself. */
  cutAt?: Policy['cutAt'];
  /** Keep at least this many user messages (the topic reference's `min_verbatim_exchanges`), moving the cut back. */
  minKeptUserTurns?: number;
  /** Sizes messages for the budget (default: stored tokens; `tokenMeasureFor(policy.tokenCount)`). */
  measure?: TokenMeasure;
  /** The budget is found once the tokens walked reach it (default) or exceed it (Opal): `keepRecent.cutWhen`. */
  cutWhen?: Policy['keepRecent']['cutWhen'];
}

/** How a cut was found. `mid-turn` cuts start the kept part with a non-user message (a split turn). */
export type CutKind = 'turn-start' | 'mid-turn' | 'forced';

/** Where {@link findCutPoint} cuts; `index` is a position in the array it was given, not a seq. */
export interface CutPoint {
  /** Index of the first kept message. Everything before it (after any previous summary) is compacted. */
  index: number;
  kind: CutKind;
  /** Tokens of the kept messages, by the options' measure (stored tokens by default). */
  keptTokens: number;
}

/** A real user turn: a user message not written by a compaction. */
export function isTurnStart(message: Message): boolean {
  return message.role === 'user' && !message.summary;
}

function keptTokensFrom(messages: readonly Message[], index: number, measure: TokenMeasure): number {
  let total = 0;
  for (let i = index; i < messages.length; i++) total += measure.message(messages[i]!);
  return total;
}

/**
 * Where accumulated tokens from the end first reach (`cutWhen: 'reached'`) or exceed the budget,
 * or `null` if they never do.
 */
function budgetPoint(
  messages: readonly Message[],
  start: number,
  keepRecentTokens: number,
  measure: TokenMeasure,
  cutWhen: Policy['keepRecent']['cutWhen'],
): { index: number; keptTokens: number } | null {
  let accumulated = 0;
  for (let index = messages.length - 1; index >= start; index--) {
    accumulated += measure.message(messages[index]!);
    const found = cutWhen === 'exceeded' ? accumulated > keepRecentTokens : accumulated >= keepRecentTokens;
    if (found) return { index, keptTokens: accumulated };
  }
  return null;
}

/** Tokens kept by a cut at `index`, from the tokens kept by a cut at `known` (walks only the gap). */
function keptTokensAt(
  messages: readonly Message[],
  index: number,
  known: number,
  knownTokens: number,
  measure: TokenMeasure,
): number {
  let total = knownTokens;
  for (let i = known; i < index; i++) total -= measure.message(messages[i]!);
  for (let i = index; i < known; i++) total += measure.message(messages[i]!);
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
  const measure = options.measure ?? TOKENIZER_MEASURE;
  const budget = budgetPoint(
    messages,
    start,
    options.keepRecentTokens,
    measure,
    options.cutWhen ?? 'reached',
  );
  if (budget === null) return null;
  const point = budget.index;
  // The topic reference's minimum exchanges: the cut may not pass the N-th user turn from the end.
  const latest = nthLastTurnStart(messages, options.minKeptUserTurns ?? 0);
  if (latest <= start) return null;

  // The nearest user message at or after the point (Opal); in the last turn (no user message
  // after the point), or in klaude-code's mode, the point itself. When that compacts nothing new
  // (Opal: a cut at index 0), there is no cut: moving further would keep less than the budget asks.
  let index = point;
  if ((options.cutAt ?? 'turn-start') === 'turn-start') {
    for (let i = point; i < messages.length; i++) {
      if (isTurnStart(messages[i]!)) {
        index = i;
        break;
      }
    }
  }
  if (index > latest) {
    // The cut would drop required turns: the latest turn start before them.
    index = -1;
    for (let i = Math.min(latest, messages.length - 1); i > start && index === -1; i--) {
      if (isTurnStart(messages[i]!)) index = i;
    }
  }
  if (index <= start) return null;
  const kind: CutKind = isTurnStart(messages[index]!) ? 'turn-start' : 'mid-turn';
  return { index, kind, keptTokens: keptTokensAt(messages, index, point, budget.keptTokens, measure) };
}

/** Opal's force: keep the last 2 messages. */
function forcedCut(messages: readonly Message[], start: number, measure: TokenMeasure): CutPoint | null {
  const index = messages.length - FORCED_KEEP_MESSAGES;
  if (index <= start) return null;
  return { index, kind: 'forced', keptTokens: keptTokensFrom(messages, index, measure) };
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
  return forcedCut(messages, start, options.measure ?? TOKENIZER_MEASURE);
}

/**
 * Tokens to keep verbatim for a compaction: an explicit per-request `override` wins; in topic
 * mode the verbatim window (docs/PRESETS.md, `topic`); else auto keeps `autoRatio` × window (Opal: window / 4),
 * an overflow emergency `emergencyRatio` × window (window / 5), and a manual request
 * `manualTokens` (20,000), or the auto budget when that is smaller (unless
 * `manualCappedByAuto` is false: Opal keeps its 20,000) or `manualTokens` is null (klaude-code
 * uses one budget). Ratio budgets are clamped to the policy's `minTokens` / `maxTokens`
 * (klaude-code: min(20000, max(4096, 35 %))). Every budget but an explicit override, the topic
 * window included, stays under budgets.ts `keepCeilingTokens`: what the trigger leaves after
 * the summary, so a small window's compaction does not keep more than its threshold allows. An
 * unlimited window (0) falls back to the manual budget, else {@link DEFAULT_KEEP_RECENT_TOKENS}.
 */
export function keepRecentTokensFor(
  reason: CompactionReason,
  model: ModelInfo,
  policy: Pick<Policy, 'keepRecent' | 'strategy' | 'topic' | 'trigger' | 'summarizer'>,
  override?: number | null,
): number {
  if (override !== undefined && override !== null) return Math.max(0, Math.floor(override));
  const ceiling = keepCeilingTokens(model, policy);
  const bounded = (tokens: number): number => (ceiling === null ? tokens : Math.min(tokens, ceiling));
  if (policy.strategy === 'topic') return bounded(policy.topic.verbatimWindowTokens);
  const { keepRecent } = policy;
  const fallback = keepRecent.manualTokens ?? keepRecent.maxTokens ?? DEFAULT_KEEP_RECENT_TOKENS;
  const ratioBudget = (ratio: number): number => {
    if (model.contextWindow <= 0) return fallback;
    const clamped = Math.max(keepRecent.minTokens, Math.floor(model.contextWindow * ratio));
    return bounded(keepRecent.maxTokens === null ? clamped : Math.min(clamped, keepRecent.maxTokens));
  };
  switch (reason) {
    case 'auto':
      return ratioBudget(keepRecent.autoRatio);
    case 'overflow':
      return ratioBudget(keepRecent.emergencyRatio);
    case 'manual': {
      if (keepRecent.manualTokens === null) return ratioBudget(keepRecent.autoRatio);
      if (!keepRecent.manualCappedByAuto) return bounded(keepRecent.manualTokens);
      return Math.min(keepRecent.manualTokens, ratioBudget(keepRecent.autoRatio));
    }
    default:
      return assertNever(reason, 'compaction reason');
  }
}

/** Whether a compaction for this reason is forced (Opal: overflow emergencies are). */
export function isForced(reason: CompactionReason): boolean {
  return reason === 'overflow';
}
