/**
 * How the summary check compares the user's words with what a summary says, and how it clips an
 * item to a bound. Its own module so the constraint ranking and the check share one comparison.
 */
import { pinnedItemText } from './pinned-section';

/**
 * How text is compared: Unicode-normalised, straight quotes, no Markdown code or emphasis marks,
 * whitespace collapsed, lower case, no trailing punctuation or ellipsis. A model that writes
 * "never run the migration against production" in a bullet keeps the constraint.
 */
export function matchKey(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[’‘]/g, "'")
    .replace(/[“”]/g, '"')
    .replace(/[`*]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase()
    .replace(/[\s.!?;:,…]+$/, '');
}

/** `text` cut to `max` characters with `…`, never inside a surrogate pair. */
export function clipItem(text: string, max: number): string {
  const oneLine = pinnedItemText(text);
  if (oneLine.length <= max) return oneLine;
  let end = Math.max(0, max - 1);
  const code = oneLine.charCodeAt(end);
  if (code >= 0xdc00 && code <= 0xdfff) end -= 1;
  return `${oneLine.slice(0, end).trimEnd()}…`;
}
