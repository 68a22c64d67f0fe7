/**
 * How prune and keep-recent budgets measure messages (policy `tokenCount`).
 *
 * `tokenizer` (every preset's default): the exact counts stored at write time, the better
 * measure. `chars`: the reference systems' own estimate (docs/PRESETS.md, "Token counts"), so a
 * preset can reproduce its system's decisions on its system's numbers: OpenCode's prune sizes
 * each output `Token.estimate` = `round(length / 4)`, Opal's cut accumulates "4 chars ≈ 1 token"
 * and klaude-code estimates "~4 chars per token". A message is measured as the model is shown it: its texts,
 * each tool call's name, arguments and shown result (a pruned output's placeholder, an unfinished
 * call's interrupted note). A file part has no characters to count and keeps its stored tokens.
 */
import {
  assertNever,
  INTERRUPTED_TOOL_RESULT,
  prunedOutputMarker,
  type Message,
  type Part,
  type ToolPart,
} from './model';
import { toolCallArguments } from './openai-format';
import type { Policy } from './policy';
import { COMPACTION_MARKER_TEXT } from './summary-messages';
import { CHARS_PER_TOKEN, estimateTokens, messageTokens } from './tokens';

/** The policy's `tokenCount`: `tokenizer` (stored exact counts) or `chars` (the references' estimate). */
export type TokenCountMode = Policy['tokenCount'];

/** Sizes for the budgets: a whole message (keep-recent cut, verbatim window), a tool output (prune). */
export interface TokenMeasure {
  message(message: Message): number;
  /** A completed tool part's output: what pruning it saves. */
  output(part: ToolPart): number;
}

/** The stored exact counts (model.ts): `messageTokens` and `outputTokens`. */
export const TOKENIZER_MEASURE: TokenMeasure = Object.freeze({
  message: messageTokens,
  output: (part: ToolPart) => part.outputTokens,
});

/** The text a tool part's result is shown as (see context.ts `renderToolPart`). */
function shownResult(part: ToolPart): string {
  if (part.status === 'pending' || part.status === 'running') return INTERRUPTED_TOOL_RESULT;
  if (part.status === 'error') return part.error ?? '';
  return part.compactedAt !== null ? prunedOutputMarker(part.callId) : (part.output ?? '');
}

/** Characters of a part as the model sees it; `null` for a file part (no characters to count). */
function partChars(part: Part): number | null {
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return part.text.length;
    case 'tool':
      return part.tool.length + toolCallArguments(part.input).length + shownResult(part).length;
    case 'compaction':
      return COMPACTION_MARKER_TEXT.length;
    case 'file':
      return null;
    default:
      return assertNever(part, 'part');
  }
}

/** `round(characters / 4)` of a message, plus its file parts' stored tokens. */
export function estimateMessageTokens(message: Message): number {
  let chars = 0;
  let files = 0;
  for (const part of message.parts) {
    const counted = partChars(part);
    if (counted === null) files += part.tokens;
    else chars += counted;
  }
  return Math.round(chars / CHARS_PER_TOKEN) + files;
}

/** The references' estimate: OpenCode's `Token.estimate` per output, about 4 characters a token per message. */
export const CHARS_MEASURE: TokenMeasure = Object.freeze({
  message: estimateMessageTokens,
  output: (part: ToolPart) => estimateTokens(part.output),
});

/** The measure a policy's `tokenCount` names (`tokenizer` when absent). */
export function tokenMeasureFor(mode: TokenCountMode | undefined): TokenMeasure {
  return mode === 'chars' ? CHARS_MEASURE : TOKENIZER_MEASURE;
}
