/**
 * Excerpts: a long text cut to a token budget by keeping its head and its tail around a marker
 * that says what was left out. The head holds how a file or log begins, the tail how it ends
 * (a test run's failures, a command's exit status), and the marker how much is missing, so the
 * model knows it sees part of the text and can ask for the rest.
 */
import type { CountTokens } from './tokens';

/** Describes what an excerpt leaves out, given the characters it omits from the middle. */
export type ExcerptMarker = (omittedChars: number) => string;

/** How many times {@link excerptText} narrows its estimate before it settles for what fits. */
const MAX_REFINEMENTS = 24;

/** `value` with thousands separators, as markers print sizes. */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** Whether index `at` falls between the two halves of a surrogate pair. */
function splitsPair(text: string, at: number): boolean {
  if (at <= 0 || at >= text.length) return false;
  const before = text.charCodeAt(at - 1);
  const after = text.charCodeAt(at);
  return before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
}

/** `text` with `kept` of its UTF-16 units kept, half from each end, and the marker between them. */
function withMiddleOmitted(text: string, kept: number, marker: ExcerptMarker): string {
  let headEnd = Math.ceil(kept / 2);
  let tailStart = text.length - Math.floor(kept / 2);
  // Never split a surrogate pair: an excerpt must stay valid UTF-16 (Postgres rejects lone halves).
  if (splitsPair(text, headEnd)) headEnd -= 1;
  if (splitsPair(text, tailStart)) tailStart += 1;
  if (tailStart < headEnd) tailStart = headEnd;
  const head = text.slice(0, headEnd);
  const tail = text.slice(tailStart);
  const line = marker(tailStart - headEnd);
  return [head, line, tail].filter((piece) => piece !== '').join('\n');
}

/**
 * The longest head-and-tail excerpt of `text` whose exact count is at most `maxTokens`, or just
 * the marker when even that does not fit (callers treat a marker alone as the smallest excerpt:
 * it may exceed a budget smaller than itself). `textTokens` is the text's known count, used to
 * estimate characters per token; the result is counted exactly, and the estimate narrowed until
 * it fits. A text that already fits is returned unchanged.
 */
export function excerptText(
  text: string,
  maxTokens: number,
  options: { textTokens: number; count: CountTokens; marker: ExcerptMarker },
): { text: string; tokens: number } {
  const { count, marker } = options;
  if (options.textTokens <= maxTokens) return { text, tokens: options.textTokens };
  const bare = marker(text.length);
  const bareTokens = count(bare);
  if (bareTokens >= maxTokens || text.length === 0) return { text: bare, tokens: bareTokens };

  // Search the kept characters between `low` (fits) and `high`; tokens grow about linearly with
  // them, so each guess scales the last one by the budget it missed (a secant step), and halves
  // the interval when that step would not move. Only excerpt-sized strings are ever counted.
  const room = maxTokens - bareTokens;
  let low = 0;
  let best = { text: bare, tokens: bareTokens };
  let high = text.length - 1;
  let guess = Math.min(high, Math.floor(room * (text.length / Math.max(1, options.textTokens))));
  for (let round = 0; round < MAX_REFINEMENTS && low < high; round++) {
    const candidate = withMiddleOmitted(text, guess, marker);
    const tokens = count(candidate);
    if (tokens <= maxTokens) {
      low = guess;
      best = { text: candidate, tokens };
      // Within 2 % of the budget is not worth more counting.
      if (tokens >= maxTokens * 0.98) break;
    } else {
      high = guess - 1;
    }
    const scaled = Math.floor((guess * room) / Math.max(1, tokens - bareTokens));
    guess = scaled > low && scaled <= high ? scaled : Math.floor((low + high + 1) / 2);
  }
  return best;
}
