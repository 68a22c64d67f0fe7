/**
 * Chunk planning for summarizer input larger than the summarizer's window. Every reference system
 * fails here: compaction is needed exactly when the history is too big to summarise in one call.
 * We split the messages into chunks whose prompts fit, and fold them one by one into a running
 * summary with the update prompt.
 *
 * Pure: the caller counts tokens (the tokenizer is asynchronous) and hands over numbers.
 */

/** Input of {@link promptTokenBudget}: the summarizer's window and output budget, in tokens. */
export interface RequestBudgetInput {
  /** The summarizer model's context window (prompt + output). */
  contextWindow: number;
  /** Output tokens the request asks for; providers reserve them inside the window. */
  maxOutputTokens: number;
  /**
   * Share of the window kept free for the difference between our tokenizer and the provider's
   * (our count is o200k/cl100k; a Llama or Claude tokenizer counts differently). Default 0.1.
   */
  safetyRatio?: number;
}

/** Chat framing a provider adds around the system and user messages (role tokens, separators). */
export const CHAT_FRAMING_TOKENS = 16;

/** Below this many transcript tokens per chunk, chunking would not converge: the window is too small. */
export const MIN_CHUNK_TOKENS = 200;

/** The largest prompt (system + user, as we count it) one summarizer request may carry; ≤ 0 when nothing fits. */
export function promptTokenBudget(input: RequestBudgetInput): number {
  const safety = Math.ceil(input.contextWindow * (input.safetyRatio ?? 0.1));
  return input.contextWindow - input.maxOutputTokens - safety - CHAT_FRAMING_TOKENS;
}

/** One chunk of {@link planSummaryChunks}: messages `[start, end)` of its input. */
export interface PlannedChunk {
  /** Index of the first message of the chunk. */
  start: number;
  /** Index after the last message of the chunk. */
  end: number;
  /** Sum of the chunk's message tokens. */
  tokens: number;
  /** A single message larger than the budget on its own: it has to be shrunk before sending. */
  oversized: boolean;
}

/** Input of {@link planSummaryChunks}; sizes are transcript tokens (after shrinking), not stored counts. */
export interface ChunkPlanInput {
  /** Tokens of each message as it appears in the transcript (after shrinking tool outputs). */
  messageTokens: readonly number[];
  /** Transcript tokens one chunk may carry: the prompt budget minus the prompt's fixed part. */
  budgetTokens: number;
  /**
   * Indexes of messages that open a user turn. When a chunk has to close, it closes before the
   * latest such index in its second half, so chunks end at turn boundaries where possible and
   * the summarizer sees whole exchanges. Optional.
   */
  turnStarts?: ReadonlySet<number>;
}

/**
 * Greedy packing in message order, every chunk at most `budgetTokens` (except an `oversized`
 * single message), preferring to close chunks at turn boundaries. Order is preserved and every
 * message lands in exactly one chunk.
 */
export function planSummaryChunks(input: ChunkPlanInput): PlannedChunk[] {
  const { messageTokens, budgetTokens } = input;
  if (!(budgetTokens > 0)) throw new RangeError(`chunk budget must be positive, got ${budgetTokens}`);
  const chunks: PlannedChunk[] = [];
  let start = 0;
  while (start < messageTokens.length) {
    let end = start;
    let tokens = 0;
    while (end < messageTokens.length && tokens + (messageTokens[end] ?? 0) <= budgetTokens) {
      tokens += messageTokens[end] ?? 0;
      end += 1;
    }
    if (end === start) {
      // One message larger than the whole budget: alone in its chunk, flagged for shrinking.
      chunks.push({ start, end: start + 1, tokens: messageTokens[start] ?? 0, oversized: true });
      start += 1;
      continue;
    }
    if (end < messageTokens.length) end = preferTurnBoundary(start, end, input.turnStarts);
    chunks.push({ start, end, tokens: sum(messageTokens, start, end), oversized: false });
    start = end;
  }
  return chunks;
}

/**
 * File lists for a summarizer prompt, bounded to about `maxChars` of paths (one a line): modified
 * files first, then read files, each list in its order. The lists are context for the model
 * (core appends the full lists to the summary), so in a session that touched thousands of files
 * they must not crowd the transcript out of the window. `null` in, `null` out.
 */
export function boundFileOps<T extends { readFiles: string[]; modifiedFiles: string[] }>(
  ops: T | null,
  maxChars: number,
): T | null {
  if (ops === null) return null;
  let left = maxChars;
  const take = (paths: readonly string[]): string[] => {
    const kept: string[] = [];
    for (const path of paths) {
      if (path.length + 1 > left) {
        left = 0;
        break;
      }
      left -= path.length + 1;
      kept.push(path);
    }
    return kept;
  };
  const modifiedFiles = take(ops.modifiedFiles);
  const readFiles = take(ops.readFiles);
  if (modifiedFiles.length === ops.modifiedFiles.length && readFiles.length === ops.readFiles.length)
    return ops;
  return { ...ops, modifiedFiles, readFiles };
}

/** The latest turn start in the second half of `[start, end)`, else `end` unchanged. */
function preferTurnBoundary(start: number, end: number, turnStarts: ReadonlySet<number> | undefined): number {
  if (!turnStarts) return end;
  const half = start + Math.ceil((end - start) / 2);
  for (let index = end; index > half; index -= 1) {
    if (turnStarts.has(index)) return index;
  }
  return end;
}

function sum(values: readonly number[], start: number, end: number): number {
  let total = 0;
  for (let index = start; index < end; index += 1) total += values[index] ?? 0;
  return total;
}
