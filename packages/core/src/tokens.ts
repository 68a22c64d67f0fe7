/**
 * Token counts: the cheap estimate, the stored per-part counts, and the hybrid context estimate.
 *
 * Every part's tokens are counted once, when it is written, and stored (model.ts). Hot paths sum
 * those stored counts and never re-tokenize history. The best single measure of the context is
 * the provider's own usage report; the hybrid estimate (Opal) calibrates on the latest one and
 * adds the stored counts of what came after it. A report is the client's word, though, and the
 * stored counts are exact: the estimate never goes below them, and a report adds at most
 * a quarter of the usable input on top (estimate-bounds.ts).
 */
import { utf8ByteLength } from '@compactor/contract';
import { boundedEstimate } from './estimate-bounds';
import {
  INTERRUPTED_TOOL_RESULT,
  assertNever,
  prunedOutputMarker,
  type Message,
  type Part,
  type ToolPart,
  type Usage,
} from './model';

/** OpenCode's heuristic: about four characters per token for English text and code. */
export const CHARS_PER_TOKEN = 4;

/** OpenCode's estimate: `max(0, round(length / 4))`; empty or missing text is 0. */
export function estimateTokens(text: string | null | undefined): number {
  return Math.max(0, Math.round((text ?? '').length / CHARS_PER_TOKEN));
}

/** An exact counter (a real tokenizer, implemented outside core): text in, tokens out. */
export type CountTokens = (text: string) => number;

/** Characters (UTF-16 units) of the pruned-output marker around its call id. */
export const PRUNED_OUTPUT_MARKER_FIXED_CHARS = prunedOutputMarker('').length;

/**
 * Tokens of the marker a pruned tool output is replaced with (`prunedOutputMarker`). It is never
 * stored, so it is estimated, and the status sums it in SQL for every pruned part: the count must
 * be one both sides compute alike for any call id. The fixed text counts its characters; the id
 * counts its UTF-8 bytes, which SQL's `octet_length` and {@link utf8ByteLength} compute exactly
 * the same (ids are valid Unicode), where JavaScript's `.length` (UTF-16 units) and SQL's
 * `char_length` (code points) part ways on characters outside the BMP. A character is never fewer
 * UTF-8 bytes than UTF-16 units, so this never undercounts the usual `length / 4` estimate of the
 * marker; rounded up, integer-only: `(fixed + bytes + 3) / 4` truncated, in both languages. The
 * context view renders a pruned part with these as its output tokens, so {@link partTokens}
 * counts a rendered part the same as the stored one.
 */
export function prunedOutputMarkerTokens(callId: string): number {
  return Math.floor(
    (PRUNED_OUTPUT_MARKER_FIXED_CHARS + utf8ByteLength(callId) + CHARS_PER_TOKEN - 1) / CHARS_PER_TOKEN,
  );
}

/** Tokens of the result the model is shown for a call that never finished (estimated likewise). */
export const INTERRUPTED_TOOL_RESULT_TOKENS = estimateTokens(INTERRUPTED_TOOL_RESULT);

/** A call still pending or running: the context view shows it with the interrupted result. */
function isUnfinished(part: ToolPart): boolean {
  return part.status === 'pending' || part.status === 'running';
}

/** Whether a tool part's output was pruned (it shows the placeholder instead). */
export function isPruned(part: ToolPart): boolean {
  return part.compactedAt !== null;
}

/**
 * Tokens a part costs in the context as the model sees it (see `renderToolPart`): its stored
 * count, except that an unfinished call adds the interrupted result and a pruned tool part counts
 * the placeholder instead of its output. Works on stored parts and on rendered ones alike.
 */
export function partTokens(part: Part): number {
  switch (part.type) {
    case 'tool':
      if (isUnfinished(part)) return part.tokens + INTERRUPTED_TOOL_RESULT_TOKENS;
      return isPruned(part)
        ? Math.max(0, part.tokens - part.outputTokens) + prunedOutputMarkerTokens(part.callId)
        : part.tokens;
    case 'text':
    case 'reasoning':
    case 'file':
    case 'compaction':
      return part.tokens;
    default:
      return assertNever(part, 'part');
  }
}

/** Sum of a message's part tokens (see {@link partTokens}). */
export function messageTokens(message: Message): number {
  let total = 0;
  for (const part of message.parts) total += partTokens(part);
  return total;
}

/** Sum of the stored counts of `messages` (see {@link partTokens}). */
export function storedTokens(messages: readonly Message[]): number {
  let total = 0;
  for (const message of messages) total += messageTokens(message);
  return total;
}

/** Length of the prompt a turn was answered from: `input + cacheRead + cacheWrite` (model.ts). */
export function promptTokens(usage: Usage): number {
  return usage.input + usage.cacheRead + usage.cacheWrite;
}

/**
 * The context a usage report measures, as of the end of that turn: its prompt plus what it
 * generated except reasoning, `prompt + max(0, output − reasoning)`. `output` includes reasoning
 * (model.ts `Usage`), and later prompts drop it: the context view never sends reasoning.
 */
export function reportedContextTokens(usage: Usage): number {
  return promptTokens(usage) + Math.max(0, usage.output - usage.reasoning);
}

/**
 * Whether a part of an assistant message opens a new step when it follows a tool part: a text
 * that is not blank (`text.trim() !== ''`), a file, or a compaction note. Reasoning and blank
 * text never do. This is exactly where the Chat Completions renderer (openai-format.ts) splits
 * a message into `assistant → tool … → assistant` steps.
 */
export function startsStep(part: Part): boolean {
  switch (part.type) {
    case 'text':
      return part.text.trim() !== '';
    case 'file':
    case 'compaction':
      return true;
    case 'reasoning':
    case 'tool':
      return false;
    default:
      return assertNever(part, 'part');
  }
}

/**
 * Index of the first part of the message's last step: the last part that {@link startsStep}
 * after a tool part, or 0 for a single-step message. Equivalently (the rule SQL mirrors): a tool
 * part belongs to the last step exactly when no later part of the same message starts a step.
 */
export function lastStepStart(parts: readonly Part[]): number {
  let start = 0;
  let sawTool = false;
  parts.forEach((part, index) => {
    if (part.type === 'tool') sawTool = true;
    else if (sawTool && startsStep(part)) {
      start = index;
      sawTool = false;
    }
  });
  return start;
}

/**
 * Tokens of what was added to an assistant message after its usage was reported: the results of
 * its **last step's** tool calls. One message can hold several steps (openai-format.ts), and
 * its usage is the last step's (model.ts `Usage`), whose prompt already held the earlier steps'
 * results; usage counts the calls themselves (they are output). A completed result counts its
 * stored `outputTokens` (the placeholder when pruned), an error its estimated text, a call still
 * pending or running the interrupted result it will be shown with.
 */
export function toolResultTokens(message: Message): number {
  let total = 0;
  const parts = message.parts;
  for (let index = lastStepStart(parts); index < parts.length; index++) {
    const part = parts[index]!;
    if (part.type !== 'tool') continue;
    if (part.status === 'completed')
      total += isPruned(part) ? prunedOutputMarkerTokens(part.callId) : part.outputTokens;
    else if (part.status === 'error') total += estimateTokens(part.error);
    else total += INTERRUPTED_TOOL_RESULT_TOKENS;
  }
  return total;
}

/** The latest usage report a context estimate can be calibrated on. */
export interface UsageReport {
  /** Index of the reporting message in the view. */
  index: number;
  message: Message;
  usage: Usage;
}

/**
 * The seq before or at which usage reports are stale: the latest compaction's summary seq (the
 * highest seq among summary messages in the view), or `null` when the view has none.
 */
export function latestSummarySeq(view: readonly Message[]): number | null {
  let latest: number | null = null;
  for (const message of view)
    if (message.summary && (latest === null || message.seq > latest)) latest = message.seq;
  return latest;
}

/**
 * The newest usable usage report in a context view: an assistant message that is not a summary,
 * did not fail, reported a non-empty prompt, and came after the latest compaction (a report from
 * before it measured a prompt that no longer exists). `lastCompactionSeq` defaults to
 * {@link latestSummarySeq}; pass it for a compaction that wrote no summary (topic truncate).
 */
export function latestUsageReport(
  view: readonly Message[],
  lastCompactionSeq?: number | null,
): UsageReport | null {
  const staleUpTo = lastCompactionSeq === undefined ? latestSummarySeq(view) : lastCompactionSeq;
  for (let index = view.length - 1; index >= 0; index--) {
    const message = view[index]!;
    if (staleUpTo !== null && message.seq <= staleUpTo) continue;
    if (message.role !== 'assistant' || message.summary || message.error !== null) continue;
    if (message.usage !== null && promptTokens(message.usage) > 0)
      return { index, message, usage: message.usage };
  }
  return null;
}

/**
 * Tokens the report counted that pruning has since replaced: outputs (before the report) pruned
 * after the reporting turn started. Times that do not parse are left alone.
 */
function prunedSinceReport(view: readonly Message[], report: UsageReport): number {
  const reportedAt = Date.parse(report.message.createdAt);
  if (Number.isNaN(reportedAt)) return 0;
  let total = 0;
  for (let index = 0; index < report.index; index++) {
    for (const part of view[index]!.parts) {
      if (part.type !== 'tool' || part.compactedAt === null || part.status !== 'completed') continue;
      const prunedAt = Date.parse(part.compactedAt);
      if (!Number.isNaN(prunedAt) && prunedAt > reportedAt) {
        total += Math.max(0, part.outputTokens - prunedOutputMarkerTokens(part.callId));
      }
    }
  }
  return total;
}

/** Policy `estimate`: `hybrid` calibrates on the last usage report (Opal), `exact` sums stored counts. */
export type EstimateMode = 'hybrid' | 'exact';

/** How big a context view is, and where the number comes from. */
export interface ContextEstimate {
  tokens: number;
  /** What the report adds over the stored count, after the cap: `tokens − stored`, 0 without one. */
  calibration: number;
  /** `usage`: calibrated on a provider report; `stored`: the sum of stored counts. */
  source: 'usage' | 'stored';
  /** Seq of the message whose usage was the base, when `source` is `usage`. */
  reportSeq: number | null;
}

/**
 * Options of {@link estimateContextTokens}; `lastCompactionSeq` keeps usage reports from before the
 * latest compaction out of the hybrid base.
 */
export interface EstimateOptions {
  /** `hybrid` (default) calibrates on usage; `exact` sums stored counts only. */
  mode?: EstimateMode;
  /**
   * The most a report may add over the stored count (`usageCalibrationCap` of the
   * session's usable input). Required: an unbounded report is what let a client's numbers
   * overrule the store.
   */
  calibrationCap: number;
  /** See {@link latestUsageReport}. */
  lastCompactionSeq?: number | null;
}

/**
 * The size of a context view (the latest summary first, then the kept and newer messages), as
 * stored: pass stored parts, not rendered ones (rendering replaces a pruned part's output count,
 * which "pruned since the report" needs).
 *
 * Hybrid (Opal): the latest usable report's {@link reportedContextTokens}, plus that message's
 * tool results, plus the stored counts of every later message, minus what pruning removed since
 * the report — held between the stored count and the stored count plus `calibrationCap`
 * ({@link boundedEstimate}). With no usable report, or in `exact` mode, the sum of stored counts.
 */
export function estimateContextTokens(view: readonly Message[], options: EstimateOptions): ContextEstimate {
  const stored = storedTokens(view);
  const report = options.mode === 'exact' ? null : latestUsageReport(view, options.lastCompactionSeq);
  if (report === null) return { tokens: stored, calibration: 0, source: 'stored', reportSeq: null };
  let reported = reportedContextTokens(report.usage) + toolResultTokens(report.message);
  for (let index = report.index + 1; index < view.length; index++) reported += messageTokens(view[index]!);
  reported -= prunedSinceReport(view, report);
  const tokens = boundedEstimate(reported, stored, options.calibrationCap);
  return { tokens, calibration: tokens - stored, source: 'usage', reportSeq: report.message.seq };
}
