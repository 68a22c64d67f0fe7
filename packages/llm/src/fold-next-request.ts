/**
 * The next request(s) of a fold: the whole rest of the range when its prompt fits, else the next
 * chunk, sized around the running summary it will carry.
 */
import { isTurnStart } from '@compactor/core';
import type { Fold, FoldProgress } from './fold';
import type { FoldState, Range } from './fold-plan';
import {
  assertRoomForChunks,
  countsWholeFirst,
  crowdedRequest,
  inSeveralRequests,
  nextChunk,
  perMessageCountLimit,
} from './fold-plan';

/**
 * The next request(s) for `messages[from…]`: all of it when its prompt fits the budget, else the
 * next chunk, sized around the running summary it will carry (after it succeeds, the rest is
 * planned again around the new one).
 */
export async function plan(
  fold: Fold,
  state: FoldState,
  from: number,
  progress: FoldProgress,
): Promise<{ state: FoldState; queue: Range[] }> {
  const whole: Range = { start: from, end: fold.messages.length };
  if (!Number.isFinite(state.budget)) return { state, queue: [whole] };
  if (await wholeFits(fold, state, from, progress.running)) return { state, queue: [whole] };
  const several = inSeveralRequests(state, fold.limits);
  return { state: several, queue: [await planChunk(fold, several, from, progress)] };
}

/**
 * Whether `messages[from…]` fit in one request. The first plan counts the whole prompt (one
 * count in the usual case, where it fits) unless the range's stored tokens say it is far too
 * long; other plans count it only when the per-message counts say it may fit.
 */
async function wholeFits(
  fold: Fold,
  state: FoldState,
  from: number,
  running: string | null,
): Promise<boolean> {
  const { messages, prompts } = fold;
  const fitsWhole = async (): Promise<boolean> => {
    const whole = { start: from, end: messages.length };
    const prompt = await prompts.promptFor(
      whole,
      await messages.slice(from, messages.length),
      running,
      state,
    );
    return prompts.fits(prompt, state.budget);
  };
  if (from === 0 && countsWholeFirst(await prompts.storedTotal(), state.budget)) return fitsWhole();
  const fixed = await prompts.fixedTokens({ start: from, end: from }, running, state);
  const rest = await prompts.transcriptCounts.until(from, perMessageCountLimit(state.budget, fixed));
  return rest.complete && (await fitsWhole());
}

/** The next chunk from `from`, planned around what its prompt holds besides its messages. */
async function planChunk(fold: Fold, state: FoldState, from: number, progress: FoldProgress): Promise<Range> {
  const { messages, prompts } = fold;
  const empty: Range = { start: from, end: from };
  // The instructions with and without the update section a later chunk has.
  const instructions = Math.max(
    await prompts.fixedTokens(empty, null, state),
    await prompts.fixedTokens(empty, 'x', state),
  );
  assertRoomForChunks(state.budget, instructions, fold.limits.maxOutputTokens);
  // What the next chunk's prompt holds besides its messages: instructions, file lists and the
  // running summary as it is now.
  const chunkBudget = state.budget - (await prompts.fixedTokens(empty, progress.running, state));
  const crowded = crowdedRequest(from, state.budget, chunkBudget, progress.chunks);
  if (crowded !== null) return crowded;
  // The first chunk needs the counts only up to the message that does not fit any more.
  const { tokens } = await prompts.transcriptCounts.until(from, chunkBudget);
  const counted = await messages.slice(from, from + tokens.length);
  const turnStarts = new Set(counted.flatMap((m, i) => (isTurnStart(m) ? [i] : [])));
  return nextChunk(from, tokens, chunkBudget, turnStarts);
}
