/**
 * The fit guarantee: after a compaction the context fits the model, whatever one message holds.
 *
 * A compaction summarises the history and keeps the recent messages verbatim. When the kept part
 * holds something huge (a 150k-character log read in the newest turn, a pasted dump larger than
 * the window) no cut can help: a cut never enters a message. Those parts are clamped instead:
 * the context view shows an excerpt of them (head and tail, and a marker with the original size
 * and the call id), while the store keeps every byte.
 *
 * Clamping goes tier by tier — tool outputs, then texts and tool errors, then tool arguments —
 * and within a tier from the oldest part to the newest, so the newest turn keeps the most. Only
 * oversized parts are cut: each tier is walked with a shrinking per-part cap (half the room, then
 * halves of that, down to {@link MIN_EXCERPT_TOKENS}), and a part above the cap loses what the
 * target still needs, never more than down to the cap. When even that cannot reach the hard
 * limit, parts shrink to their markers alone.
 */
import { excerptText, formatCount, type ExcerptMarker } from './excerpt';
import type { Message, Part, ToolPart } from './model';
import { messageTokens, partTokens, type CountTokens } from './tokens';

/** The smallest excerpt worth keeping before a part is reduced to its marker alone. */
export const MIN_EXCERPT_TOKENS = 64;

/** The key a clamped tool input is shown under: `{ "_clamped": "<excerpt of the arguments>" }`. */
export const CLAMPED_INPUT_KEY = '_clamped';

/** Which content of a part a clamp replaced. */
export type ClampedField = 'output' | 'error' | 'text' | 'input';

/** One part the context view shows clamped: where it is, and the part as the view will show it. */
export interface PartClamp {
  messageId: string;
  seq: number;
  /** Position in the message's parts (the store's `parts.idx`). */
  index: number;
  field: ClampedField;
  /** The part with the field replaced by its excerpt and its token counts recounted. */
  part: Part;
  /** What the part cost in the view before and after ({@link partTokens}). */
  tokensBefore: number;
  tokensAfter: number;
}

/** Exact counters: a text's tokens, and a tool input's as the store counts it (canonical JSON). */
export interface FitCounters {
  text: CountTokens;
  input: (input: unknown) => number;
}

/** Budgets for {@link fitKeptMessages}. */
export interface FitOptions {
  /** Tokens of everything else the view holds: pinned system messages and summary messages. */
  fixedTokens: number;
  /** The total to aim for (at most `limitTokens`): e.g. the trigger's point. */
  targetTokens: number;
  /** The total that must not be exceeded: the usable input. */
  limitTokens: number;
  count: FitCounters;
}

/** What {@link fitKeptMessages} decided. */
export interface FitResult {
  clamps: PartClamp[];
  /** View tokens (fixed + kept) before and after the clamps. */
  tokensBefore: number;
  tokensAfter: number;
  /** `tokensAfter <= limitTokens`. When false, every clampable part is already at its marker. */
  fits: boolean;
}

interface Candidate {
  messageIndex: number;
  partIndex: number;
  field: ClampedField;
  /** Tokens of the field's original content. */
  fieldTokens: number;
  /** The field's original content as text (a tool input serialised). */
  content: string;
}

/** The kept messages' parts that can be clamped, by tier, oldest first within each tier. */
function candidateTiers(kept: readonly Message[], count: FitCounters): Candidate[][] {
  const outputs: Candidate[] = [];
  const texts: Candidate[] = [];
  const inputs: Candidate[] = [];
  kept.forEach((message, messageIndex) => {
    message.parts.forEach((part, partIndex) => {
      const at = { messageIndex, partIndex };
      if (part.type === 'text' || part.type === 'reasoning') {
        texts.push({ ...at, field: 'text', fieldTokens: part.tokens, content: part.text });
      } else if (part.type === 'tool') {
        if (part.status === 'completed' && part.compactedAt === null && part.output !== null)
          outputs.push({ ...at, field: 'output', fieldTokens: part.outputTokens, content: part.output });
        if (part.status === 'error' && part.error !== null)
          texts.push({ ...at, field: 'error', fieldTokens: count.text(part.error), content: part.error });
        const args = inputText(part.input);
        if (args !== '')
          inputs.push({ ...at, field: 'input', fieldTokens: count.input(part.input), content: args });
      }
    });
  });
  return [outputs, texts, inputs];
}

function inputText(input: unknown): string {
  if (input === null || input === undefined) return '';
  if (typeof input === 'string') return input;
  try {
    return JSON.stringify(input) ?? '';
  } catch {
    return String(input);
  }
}

/** How a marker names what it clamped. */
const FIELD_NAMES: Record<ClampedField, string> = {
  output: 'tool output',
  error: 'tool error',
  input: 'tool arguments',
  text: 'text',
};

function markerFor(candidate: Candidate, part: Part): ExcerptMarker {
  const size = `${formatCount(candidate.content.length)} characters, ${formatCount(candidate.fieldTokens)} tokens`;
  const what = FIELD_NAMES[candidate.field];
  const call = part.type === 'tool' ? `; call ${part.callId}` : '';
  return (omitted) =>
    `[... ${what} clamped to fit the context window: ${formatCount(omitted)} of ${size} left out${call}]`;
}

/** The part with the candidate's field cut to `cap` tokens, recounted. */
function clampPart(part: Part, candidate: Candidate, cap: number, count: FitCounters): Part {
  const excerpt = excerptText(candidate.content, cap, {
    textTokens: candidate.fieldTokens,
    count: count.text,
    marker: markerFor(candidate, part),
  });
  if (part.type === 'text' || part.type === 'reasoning')
    return { ...part, text: excerpt.text, tokens: excerpt.tokens };
  const tool = part as ToolPart;
  switch (candidate.field) {
    case 'output':
      return {
        ...tool,
        output: excerpt.text,
        tokens: tool.tokens - tool.outputTokens + excerpt.tokens,
        outputTokens: excerpt.tokens,
      };
    case 'error':
      return { ...tool, error: excerpt.text, tokens: tool.tokens - candidate.fieldTokens + excerpt.tokens };
    case 'input': {
      const input = { [CLAMPED_INPUT_KEY]: excerpt.text };
      return { ...tool, input, tokens: tool.tokens - candidate.fieldTokens + count.input(input) };
    }
    default:
      throw new Error(`a ${part.type} part has no ${candidate.field} to clamp`);
  }
}

/** The caps one tier is cut with: half the room, halved down to the smallest excerpt. */
function capsFor(roomTokens: number): number[] {
  const caps: number[] = [];
  for (let cap = Math.floor(roomTokens / 2); cap > MIN_EXCERPT_TOKENS; cap = Math.floor(cap / 2))
    caps.push(cap);
  caps.push(MIN_EXCERPT_TOKENS);
  return caps;
}

/**
 * The clamps that bring `fixedTokens` plus the kept messages to `targetTokens`, or failing that
 * to `limitTokens` (see the module comment for the order). Pure: the caller stores them.
 */
export function fitKeptMessages(kept: readonly Message[], options: FitOptions): FitResult {
  const { count } = options;
  const keptTokens = kept.reduce((sum, message) => sum + messageTokens(message), 0);
  const tokensBefore = options.fixedTokens + keptTokens;
  const target = Math.min(options.targetTokens, options.limitTokens);
  if (tokensBefore <= target) return { clamps: [], tokensBefore, tokensAfter: tokensBefore, fits: true };

  const clamps = new Map<string, PartClamp>();
  let total = tokensBefore;
  const current = (candidate: Candidate): Part => {
    const key = `${candidate.messageIndex}:${candidate.partIndex}`;
    return clamps.get(key)?.part ?? kept[candidate.messageIndex]!.parts[candidate.partIndex]!;
  };
  /** Cuts the candidate's field to `cap` when that saves tokens; false once the goal is reached. */
  /**
   * Cuts the candidate's field to what reaching `goal` needs, but not below `cap`, when that
   * saves tokens; false once the goal is reached.
   */
  const cut = (candidate: Candidate, cap: number, goal: number): boolean => {
    if (total <= goal) return false;
    const message = kept[candidate.messageIndex]!;
    const original = message.parts[candidate.partIndex]!;
    const shown = current(candidate);
    const shownFieldTokens = candidate.fieldTokens - (partTokens(original) - partTokens(shown));
    const size = Math.max(cap, shownFieldTokens - (total - goal));
    if (size >= shownFieldTokens) return true;
    const clamped = clampPart(original, candidate, size, count);
    const saved = partTokens(shown) - partTokens(clamped);
    if (saved <= 0) return true;
    total -= saved;
    clamps.set(`${candidate.messageIndex}:${candidate.partIndex}`, {
      messageId: message.id,
      seq: message.seq,
      index: candidate.partIndex,
      field: candidate.field,
      part: clamped,
      tokensBefore: partTokens(original),
      tokensAfter: partTokens(clamped),
    });
    return total > goal;
  };

  const tiers = candidateTiers(kept, count);
  const room = Math.max(0, target - options.fixedTokens);
  // First the target, with excerpts no smaller than MIN_EXCERPT_TOKENS; then, if the limit is
  // still exceeded, every clampable part down to its marker.
  outer: for (const tier of tiers) {
    for (const cap of capsFor(room)) {
      for (const candidate of tier) if (!cut(candidate, cap, target)) break outer;
    }
  }
  if (total > options.limitTokens) {
    markers: for (const tier of tiers) {
      for (const candidate of tier) if (!cut(candidate, 0, options.limitTokens)) break markers;
    }
  }
  return {
    clamps: [...clamps.values()],
    tokensBefore,
    tokensAfter: total,
    fits: total <= options.limitTokens,
  };
}
