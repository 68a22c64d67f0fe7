/**
 * Counts the tokens of a text for fitting prompts into windows. May be asynchronous: the exact
 * tokenizer yields to the event loop on long inputs. Core's synchronous `CountTokens` (and its
 * `estimateTokens`, for when no tokenizer is wired in) fit this type as they are.
 */
export type CountTokensAsync = (
  text: string,
  options?: { signal?: AbortSignal | undefined },
) => number | Promise<number>;
