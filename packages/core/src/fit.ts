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
 * limit, parts shrink to their markers alone. A clamped tool call keeps its short paths and
 * command line (clamp-input.ts) until nothing else is left to cut.
 */
import { clampInput, MIN_EXCERPT_TOKENS } from './clamp-input';
import { excerptText, formatCount, type ExcerptMarker } from './excerpt';
import type { Message, Part } from './model';
import { messageTokens, partTokens, type CountTokens } from './tokens';

export { CLAMPED_INPUT_KEY, MIN_EXCERPT_TOKENS } from './clamp-input';

/** Which content of a part a clamp replaced. */
export type ClampedField = 'output' | 'error' | 'text' | 'input';

/** One part the context view shows clamped: where it is, and the part as the view will show it. */
export interface PartClamp {
  messageId: string;
  seq: number;
  /** Position in the message's parts (the store's `parts.idx`). */
  index: number;
  /** The field clamped last, and every field this fit replaced (a part may lose several). */
  field: ClampedField;
  fields: ClampedField[];
  /** The part with the fields replaced by their excerpts and its token counts recounted. */
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
  /** A tool input's original value (objects keep their keys when clamped). */
  input?: unknown;
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
        // A call still running keeps its arguments whole: its result will be PATCHed onto the
        // part, and a clamp made before would be counted in place of the finished part.
        const args = part.status === 'completed' || part.status === 'error' ? inputText(part.input) : '';
        if (args !== '')
          inputs.push({
            ...at,
            field: 'input',
            fieldTokens: count.input(part.input),
            content: args,
            input: part.input,
          });
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

/** Tokens of one field of a part as the store counts it (a tool part's own count is their sum). */
function fieldTokensOf(part: Part, field: ClampedField, count: FitCounters): number {
  if (part.type === 'text' || part.type === 'reasoning') return part.tokens;
  if (part.type !== 'tool') return 0;
  if (field === 'output') return part.outputTokens;
  if (field === 'error') return part.error === null ? 0 : count.text(part.error);
  return count.input(part.input);
}

/**
 * `shown` (the part as the view shows it, perhaps with another field already clamped) with the
 * candidate's field cut to `cap` tokens from its original content, recounted.
 */
function clampPart(
  shown: Part,
  candidate: Candidate,
  cap: number,
  count: FitCounters,
  keepIdentifying = true,
): Part {
  const marker = markerFor(candidate, shown);
  const rest = shown.tokens - fieldTokensOf(shown, candidate.field, count);
  if (candidate.field === 'input' && shown.type === 'tool') {
    const input = clampInput(
      { input: candidate.input, content: candidate.content },
      { cap, callId: shown.callId, countText: count.text, countInput: count.input, marker, keepIdentifying },
    );
    return { ...shown, input, tokens: rest + count.input(input) };
  }
  const excerpt = excerptText(candidate.content, cap, {
    textTokens: candidate.fieldTokens,
    count: count.text,
    marker,
  });
  if (shown.type === 'text' || shown.type === 'reasoning')
    return { ...shown, text: excerpt.text, tokens: excerpt.tokens };
  if (shown.type !== 'tool') throw new Error(`a ${shown.type} part has no ${candidate.field} to clamp`);
  if (candidate.field === 'output')
    return { ...shown, output: excerpt.text, tokens: rest + excerpt.tokens, outputTokens: excerpt.tokens };
  return { ...shown, error: excerpt.text, tokens: rest + excerpt.tokens };
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
  const cut = (candidate: Candidate, cap: number, goal: number, keepIdentifying = true): boolean => {
    if (total <= goal) return false;
    const message = kept[candidate.messageIndex]!;
    const original = message.parts[candidate.partIndex]!;
    const shown = current(candidate);
    const shownFieldTokens = fieldTokensOf(shown, candidate.field, count);
    const size = Math.max(cap, shownFieldTokens - (total - goal));
    if (size >= shownFieldTokens) return true;
    const clamped = clampPart(shown, candidate, size, count, keepIdentifying);
    const saved = partTokens(shown) - partTokens(clamped);
    if (saved <= 0) return true;
    total -= saved;
    const key = `${candidate.messageIndex}:${candidate.partIndex}`;
    const fields = clamps.get(key)?.fields ?? [];
    clamps.set(key, {
      messageId: message.id,
      seq: message.seq,
      index: candidate.partIndex,
      field: candidate.field,
      fields: fields.includes(candidate.field) ? fields : [...fields, candidate.field],
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
  // Last, and only when nothing else is left to cut: arguments lose the paths and commands they kept.
  if (total > options.limitTokens) {
    for (const candidate of tiers[2]!) if (!cut(candidate, 0, options.limitTokens, false)) break;
  }
  return {
    clamps: [...clamps.values()],
    tokensBefore,
    tokensAfter: total,
    fits: total <= options.limitTokens,
  };
}
