/**
 * How much of the user's latest request a pinned section shows. The latest request is what the
 * agent is doing now: a summary that keeps its opening only (a pasted 4,500-character spec cut
 * at 1,000) leaves the agent working from a fragment. So it is pinned **whole**, on an allowance
 * of its own beside the section's share: up to {@link LATEST_REQUEST_BUDGET_SHARE} of the
 * summary's token budget (at four characters a token; the summary budget is at most a fifth of
 * the usable window, so this is at most a tenth of it — 2,800 tokens, about 11,000 characters,
 * at a 32k window). A request longer than that is shown as its head and its tail around a
 * marker that says how much is left out and that the message is stored whole, where recall
 * finds it by its words. The fit step still measures the summary with its section exactly and
 * moves the boundary or cuts the summary's own text first, so the context fits either way.
 */
import { formatCount } from './excerpt';
import { pinnedItemText } from './pinned-section';
import { CHARS_PER_TOKEN } from './tokens';

/** Share of the summary's token budget the latest request may take, beside the section's own share. */
export const LATEST_REQUEST_BUDGET_SHARE = 0.5;

/** The fewest characters the allowance gives, however small the budget (the marker needs room). */
const MIN_LATEST_REQUEST_CHARS = 1_000;

/** Characters the latest request may take in a section for a summary budget of `budgetTokens`. */
export function latestRequestMaxChars(budgetTokens: number): number {
  return Math.max(
    MIN_LATEST_REQUEST_CHARS,
    Math.floor(Math.max(0, budgetTokens) * LATEST_REQUEST_BUDGET_SHARE * CHARS_PER_TOKEN),
  );
}

/** The marker between a long request's head and tail. */
export function latestRequestMarker(omitted: number, total: number): string {
  return (
    `[… ${formatCount(omitted)} of ${formatCount(total)} characters of this request not shown here: ` +
    'the message is stored whole, and recall finds it by its words …]'
  );
}

/**
 * The latest request as one pinned line's item: whole when it fits `maxChars`, else its head and
 * tail (two thirds and one third of what the marker leaves) around {@link latestRequestMarker}.
 * Never longer than `maxChars`, and never cut inside a surrogate pair.
 */
export function fitLatestRequest(text: string, maxChars: number): string {
  const line = pinnedItemText(text);
  if (line.length <= maxChars) return line;
  const marker = latestRequestMarker(line.length, line.length);
  const room = Math.max(0, maxChars - marker.length - 2);
  let headEnd = Math.floor((room * 2) / 3);
  let tailStart = line.length - (room - headEnd);
  if (isLowSurrogate(line.charCodeAt(headEnd))) headEnd -= 1;
  if (isLowSurrogate(line.charCodeAt(tailStart))) tailStart += 1;
  const head = line.slice(0, headEnd).trimEnd();
  const tail = line.slice(tailStart).trimStart();
  const omitted = line.length - head.length - tail.length;
  return `${head} ${latestRequestMarker(omitted, line.length)} ${tail}`.trim();
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
