/**
 * The planning half of a chunked summary (`summarizeMessages`): what the next request holds and
 * how an answer, a cut-off or an overflow error changes the plan. Pure: the executor counts
 * tokens, sends the requests and hands the numbers and outcomes over; the plan's state is
 * replaced by the transitions below, never mutated.
 */
import { MIN_CHUNK_TOKENS, planSummaryChunks, promptTokenBudget } from './chunking';
import { LlmFatalError, LlmOverflowError } from './errors';

/**
 * Share of `maxOutputTokens` each part of a summary written in several requests is asked to stay
 * within (core's `summaryLengthNote`). The running summary is merged into the next request, and a
 * model asked to keep everything tends to write a bit more each time: without a target below the
 * output limit it grows from chunk to chunk until an answer is cut off at `max_tokens`. The rest
 * of the budget is slack for a model that overshoots the target.
 */
export const FOLD_TARGET_SHARE = 0.5;
/** The smallest length target a cut-off answer can bring the fold down to (or `maxOutputTokens / 2`). */
export const MIN_FOLD_TARGET_TOKENS = 128;
/** Cut-off answers in a row after which the fold gives up; each one made the next request smaller. */
export const MAX_CUT_OFFS_IN_A_ROW = 4;
/**
 * How often a provider's overflow error makes the fold re-plan with a smaller budget before
 * giving up. Each re-plan halves the request, so four find a window down to a sixteenth of the
 * first request's size; a provider that still refuses is not one whose window we misjudged.
 */
export const MAX_OVERFLOW_REPLANS = 4;
/**
 * Attempts at cutting a single message that does not fit on its own down to the room its prompt
 * leaves. Each attempt scales by the room measured on the previous one, so it converges in one
 * or two; the bound only stops a message whose count does not fall as it is cut.
 */
export const SHRINK_ATTEMPTS = 5;
/**
 * How much of the room a message that does not fit is cut to. Tokens are not proportional to
 * characters (`shrinkMessage` cuts characters and adds a marker line, and the cut text tokenizes
 * differently), so a cut to exactly the measured room often misses by a few tokens: aiming 10 %
 * below makes the first attempt fit in the usual case.
 */
export const SHRINK_AIM = 0.9;
/** Share of the prompt budget the "files touched so far" lists may take in one request. */
export const FILE_LIST_SHARE = 1 / 8;
/**
 * Characters of a file path per token, to turn the file lists' token share into the character
 * bound `boundFileOps` takes. About 4 for paths in o200k/cl100k; an estimate is enough because
 * the whole prompt is counted exactly before it is sent.
 */
export const FILE_LIST_CHARS_PER_TOKEN = 4;
/**
 * Stored tokens of a range, in prompt budgets, above which the first plan does not count the
 * whole prompt to learn whether it fits: it counts message by message only as far as one request
 * can reach. The stored tokens are what the messages cost in the context; the transcript bounds
 * tool results and arguments, so it is often much smaller, and a range of up to twice the budget
 * may still fit: one count of its whole prompt settles it (the usual case, where it fits, then
 * needs no other count). A larger range is not worth tokenizing whole to learn that it does not.
 */
export const WHOLE_COUNT_MAX_BUDGETS = 2;
/**
 * How far past the room for transcript the per-message counts go before the rest of the range
 * is taken to need several requests. Each message is counted on its own, plus one token for the
 * blank line between blocks, so their sum can run a few percent above the joined transcript's
 * count: a range whose sum is up to 10 % over the room may still fit in one request, and only
 * such a range has its whole prompt counted.
 */
export const PER_MESSAGE_COUNT_SLACK = 1.1;

/** Messages `[start, end)` of the range being summarised: the content of one request. */
export interface Range {
  start: number;
  end: number;
}

/** What the fold plans with; replaced by the transitions below, never mutated. */
export interface FoldState {
  /**
   * The largest prompt (system + user, as we count it) a request may carry. Infinite while the
   * window is unknown and no overflow error has taught us a budget.
   */
  readonly budget: number;
  /**
   * The length every answer is asked to stay within (core's `summaryLengthNote`); `null` (no
   * note) while the input goes in one request that has not been cut off. Only ever lowered.
   */
  readonly target: number | null;
  /** Cut-off answers since the last valid one; each made the request after it smaller. */
  readonly cutOffsInARow: number;
  /** Overflow errors answered with a smaller budget so far. */
  readonly replans: number;
}

/** The fixed figures of one fold, from the summarizer settings. */
export interface FoldLimits {
  readonly maxOutputTokens: number;
  /** The length target once the input takes several requests: {@link FOLD_TARGET_SHARE} of the output. */
  readonly firstTarget: number;
  /** The lowest target cut-offs can bring it down to. */
  readonly minTarget: number;
}

/** The settings a fold's plan depends on (a subset of `SummarizerSettings`). */
export interface FoldSettings {
  model: string;
  maxOutputTokens: number;
  /** The summarizer model's window; `null` when unknown. */
  contextWindow: number | null;
}

/**
 * The plan before the first request: the prompt budget the window leaves (infinite when it is
 * unknown), no length target yet. `LlmFatalError` when `maxOutputTokens` leaves no room at all.
 */
export function startFold(settings: FoldSettings): { state: FoldState; limits: FoldLimits } {
  const budget =
    settings.contextWindow === null
      ? Number.POSITIVE_INFINITY
      : promptTokenBudget({
          contextWindow: settings.contextWindow,
          maxOutputTokens: settings.maxOutputTokens,
        });
  if (budget <= 0) {
    throw new LlmFatalError(
      `maxOutputTokens ${settings.maxOutputTokens} leaves no room for a prompt in the ${settings.contextWindow}-token window of ${settings.model}`,
    );
  }
  const firstTarget = Math.floor(settings.maxOutputTokens * FOLD_TARGET_SHARE);
  return {
    state: { budget, target: null, cutOffsInARow: 0, replans: 0 },
    limits: {
      maxOutputTokens: settings.maxOutputTokens,
      firstTarget,
      minTarget: Math.min(MIN_FOLD_TARGET_TOKENS, firstTarget),
    },
  };
}

/** The character bound of the file lists in one prompt; unbounded while the budget is. */
export function fileListMaxChars(budget: number): number {
  return Number.isFinite(budget)
    ? Math.floor(budget * FILE_LIST_SHARE * FILE_LIST_CHARS_PER_TOKEN)
    : Infinity;
}

/**
 * Whether the first plan counts the whole prompt before any message on its own, for a range of
 * `storedTokens` (later plans count it only when the per-message counts say it may fit).
 */
export function countsWholeFirst(storedTokens: number, budget: number): boolean {
  return storedTokens <= budget * WHOLE_COUNT_MAX_BUDGETS;
}

/** How many transcript tokens the per-message counts go up to before the range is taken to need several requests. */
export function perMessageCountLimit(budget: number, fixedTokens: number): number {
  return budget * PER_MESSAGE_COUNT_SLACK - fixedTokens;
}

/** The input takes several requests: from now on each answer is asked to stay well below the output limit. */
export function inSeveralRequests(state: FoldState, limits: FoldLimits): FoldState {
  return state.target === null ? { ...state, target: limits.firstTarget } : state;
}

/**
 * Refuses a window too small for the fold: the instructions (with the update section a later
 * chunk has) and a running summary of up to `maxOutputTokens` must leave room for some
 * transcript, or no chunking can converge. A configuration problem, so `LlmFatalError`.
 */
export function assertRoomForChunks(
  budget: number,
  instructionTokens: number,
  maxOutputTokens: number,
): void {
  const room = budget - instructionTokens - maxOutputTokens;
  if (room < MIN_CHUNK_TOKENS) {
    throw new LlmFatalError(
      `the summarizer window (prompt budget ${budget} tokens) leaves ${room} ` +
        `tokens per chunk after instructions and a summary of ${maxOutputTokens} tokens; ` +
        'raise its contextWindow or lower maxOutputTokens',
    );
  }
}

/**
 * The next request when the running summary leaves less than `MIN_CHUNK_TOKENS` of transcript
 * (`chunkBudget`), else `null` (plan a chunk). Before any chunk that is the previous summary:
 * too large for this window, an `LlmOverflowError`. After one it is our own running summary
 * come back longer than we count `maxOutputTokens`: one message goes with it (cut to fit if need
 * be), and the answer is asked to be shorter.
 */
export function crowdedRequest(
  from: number,
  budget: number,
  chunkBudget: number,
  chunksDone: number,
): Range | null {
  if (chunkBudget >= MIN_CHUNK_TOKENS) return null;
  if (chunksDone === 0) {
    throw new LlmOverflowError(
      `the summarizer window (prompt budget ${budget} tokens) leaves ${chunkBudget} tokens per chunk after ` +
        'instructions and the running summary: the previous summary is too large for this window',
      null,
    );
  }
  return { start: from, end: from + 1 };
}

/**
 * The next chunk from `from`: greedy within `chunkBudget` transcript tokens, closing at a turn
 * start where it can. `messageTokens` are the counts from `from` on, as far as they were needed
 * (the message that passed the budget included); `turnStarts` indexes them.
 */
export function nextChunk(
  from: number,
  messageTokens: readonly number[],
  chunkBudget: number,
  turnStarts: ReadonlySet<number>,
): Range {
  const [next] = planSummaryChunks({ messageTokens, budgetTokens: chunkBudget, turnStarts });
  return { start: from + (next?.start ?? 0), end: from + (next?.end ?? messageTokens.length) };
}

/** `range` in two: the first half takes the middle message of an odd count. */
export function halves(range: Range): [Range, Range] {
  const middle = range.start + Math.ceil((range.end - range.start) / 2);
  return [
    { start: range.start, end: middle },
    { start: middle, end: range.end },
  ];
}

/**
 * After an answer to `range` was cut off: a smaller request, never the same one (half the
 * length target, not below `minTarget`, and for several messages half of them), or `null` when
 * nothing can be made smaller or after {@link MAX_CUT_OFFS_IN_A_ROW}.
 */
export function afterCutOff(
  state: FoldState,
  limits: FoldLimits,
  range: Range,
): { state: FoldState; requests: Range[] } | null {
  if (state.cutOffsInARow >= MAX_CUT_OFFS_IN_A_ROW) return null;
  const { target } = state;
  const lowered = target === null ? limits.firstTarget : Math.max(limits.minTarget, Math.floor(target / 2));
  const several = range.end - range.start > 1;
  if (!several && target !== null && lowered >= target) return null;
  return {
    state: { ...state, target: lowered, cutOffsInARow: state.cutOffsInARow + 1 },
    requests: several ? halves(range) : [range],
  };
}

/** After a valid answer: cut-offs are counted in a row. */
export function afterAnswer(state: FoldState): FoldState {
  return state.cutOffsInARow === 0 ? state : { ...state, cutOffsInARow: 0 };
}

/** Whether an overflow error may still be answered with a re-plan. */
export function mayReplan(state: FoldState): boolean {
  return state.replans < MAX_OVERFLOW_REPLANS;
}

/**
 * After the provider said a request of `promptTokens` did not fit although we thought it did
 * (unknown window, or its tokenizer counts more than ours): the budget that halves the whole
 * request (prompt + output), so an unknown window is found in a few steps without guessing its
 * size; `null` when that leaves less than `MIN_CHUNK_TOKENS` or the re-plans are used up.
 */
export function afterOverflow(
  state: FoldState,
  promptTokens: number,
  maxOutputTokens: number,
): FoldState | null {
  if (!mayReplan(state)) return null;
  const budget = Math.floor((promptTokens + maxOutputTokens) / 2) - maxOutputTokens;
  if (budget < MIN_CHUNK_TOKENS) return null;
  return { ...state, budget, replans: state.replans + 1 };
}

/**
 * The share of a single message to keep on the next attempt at fitting it: the previous share
 * scaled by the room the prompt leaves for it (`budget - fixedTokens`) over what it took
 * (`tokens - fixedTokens`), aimed {@link SHRINK_AIM} below.
 */
export function shrinkRatio(previous: number, budget: number, fixedTokens: number, tokens: number): number {
  return previous * (Math.max(0, (budget - fixedTokens) / Math.max(1, tokens - fixedTokens)) * SHRINK_AIM);
}
