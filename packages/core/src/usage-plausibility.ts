/**
 * Whether a usage report can be the session's model's at all. The estimate already holds any
 * report between the stored count and a bounded calibration (tokens.ts `boundedEstimate`), so a
 * wrong report cannot move the trigger or the served context far; this check refuses the ones
 * that are plainly not a measurement (a made-up number, 2³¹−1, a sum mapped twice), so nothing
 * is stored from them and the client learns its mapping is broken instead of being silently
 * corrected.
 */
import type { Usage } from './model';
import { promptTokens } from './tokens';

/**
 * A report's prompt or output may be at most this many context windows. A prompt somewhat over
 * the window is a real thing (a provider that accepted an oversized prompt: the silent overflow
 * the trigger reacts to), and tokenizers disagree by a few percent; ten windows is no model's
 * prompt or answer, and leaves every honest report, however odd, through.
 */
export const USAGE_REPORT_MAX_WINDOWS = 10;

/** The largest value of a field over a batch's reports, and the message it came from. */
export interface UsagePeak {
  /** Index of the message in its batch. */
  index: number;
  tokens: number;
}

/** The largest prompt (`input + cacheRead + cacheWrite`) and output a batch reports. */
export interface UsagePeaks {
  prompt: UsagePeak | null;
  output: UsagePeak | null;
}

/** {@link UsagePeaks} of a batch's reports, in batch order (messages without usage are skipped). */
export function usagePeaks(usages: ReadonlyArray<Usage | null | undefined>): UsagePeaks {
  const peaks: UsagePeaks = { prompt: null, output: null };
  usages.forEach((usage, index) => {
    if (!usage) return;
    const prompt = promptTokens(usage);
    if (peaks.prompt === null || prompt > peaks.prompt.tokens) peaks.prompt = { index, tokens: prompt };
    if (peaks.output === null || usage.output > peaks.output.tokens)
      peaks.output = { index, tokens: usage.output };
  });
  return peaks;
}

/** A report no model of this window can have made. */
export interface ImplausibleUsage {
  /** Index of the message in its batch. */
  index: number;
  /** `prompt`: `input + cacheRead + cacheWrite`; `output`: `output`. */
  field: 'prompt' | 'output';
  tokens: number;
  contextWindow: number;
  /** {@link USAGE_REPORT_MAX_WINDOWS} × the window: the most the field may be. */
  limit: number;
}

/**
 * The first field of `peaks` over {@link USAGE_REPORT_MAX_WINDOWS} context windows, or null. An
 * unlimited window (0) bounds nothing.
 */
export function implausibleUsage(peaks: UsagePeaks, contextWindow: number): ImplausibleUsage | null {
  if (contextWindow <= 0) return null;
  const limit = contextWindow * USAGE_REPORT_MAX_WINDOWS;
  for (const field of ['prompt', 'output'] as const) {
    const peak = peaks[field];
    if (peak !== null && peak.tokens > limit)
      return { index: peak.index, field, tokens: peak.tokens, contextWindow, limit };
  }
  return null;
}

const FIELD_WORDS: Record<ImplausibleUsage['field'], string> = {
  prompt: 'a prompt (input + cacheRead + cacheWrite)',
  output: 'an output',
};

/** The refusal's words: the field, the numbers, the window, and where the mapping is documented. */
export function describeImplausibleUsage(found: ImplausibleUsage): string {
  const n = (value: number) => value.toLocaleString('en-US');
  return (
    `usage reports ${FIELD_WORDS[found.field]} of ${n(found.tokens)} tokens, more than ` +
    `${USAGE_REPORT_MAX_WINDOWS} × the model's ${n(found.contextWindow)}-token context window ` +
    `(${n(found.limit)}): no turn of this model can report that; map the provider's usage as ` +
    'docs/API.md#usage describes (nothing was stored)'
  );
}
