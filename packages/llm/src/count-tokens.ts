/**
 * Counts the tokens of a text. Asynchronous because the exact tokenizer yields to the event loop
 * on long inputs; a synchronous estimate fits too.
 */
export type CountTokens = (
  text: string,
  options?: { signal?: AbortSignal | undefined },
) => number | Promise<number>;

/** Four characters a token: the reference systems' estimate, for when no tokenizer is wired in. */
export function estimateTokenCount(text: string): number {
  return Math.ceil(text.length / 4);
}
