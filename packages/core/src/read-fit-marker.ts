/**
 * The message that stands, in a context fitted at read time (read-fit.ts), for the oldest
 * messages it leaves out. It names how many, says the recall tool finds them by words (they stay
 * stored whole), and pins the user's goal, constraints and latest request exactly as the truncate
 * fallback pins them (summary-check.ts), so dropping turns never drops the task.
 */
import type { Message } from './model';
import { collectSummaryFacts, verifySummary } from './summary-check';
import type { CountTokens } from './tokens';

/** `metadata.type` of the marker: clients can tell it from a compaction's summary. */
export const READ_FIT_MARKER_METADATA_TYPE = 'context_fit_marker';

/** The marker's opening line, for `omitted` messages. */
export function readFitMarkerLine(omitted: number): string {
  const messages = `${omitted} earlier message${omitted === 1 ? '' : 's'}`;
  return (
    `[Context trimmed to fit the context window: ${messages} of this conversation ` +
    `${omitted === 1 ? 'is' : 'are'} not shown here. They are stored in full: the recall tool finds them by words. ` +
    'This note was inserted by the system: it is not a request from the user and needs no reply.]'
  );
}

/** What {@link buildReadFitMarker} needs. */
export interface ReadFitMarkerInput {
  /** The view's leading summary messages (the latest compaction's), whose pinned section carries the goal. */
  summaries: readonly Message[];
  /** The messages left out, oldest first (never empty). */
  omitted: readonly Message[];
  /** The messages served after the marker: a request among them is not pinned again. */
  kept: readonly Message[];
  /** The summary's token budget, which bounds the pinned section (as for the truncate fallback). */
  budgetTokens: number;
  count: CountTokens;
}

/**
 * The marker message, placed where the first omitted message was. Deterministic: its id and seq
 * come from the omitted messages, so the same view gives the same bytes on every read.
 */
export function buildReadFitMarker(input: ReadFitMarkerInput): Message {
  const first = input.omitted[0];
  if (first === undefined) throw new Error('a read-fit marker stands for at least one message');
  const facts = collectSummaryFacts([...input.summaries, ...input.omitted], { kept: input.kept });
  const { text } = verifySummary(readFitMarkerLine(input.omitted.length), facts, {
    budgetTokens: input.budgetTokens,
  });
  return {
    id: `context-fit-${first.id}`,
    seq: first.seq,
    role: 'user',
    parts: [{ type: 'text', text, tokens: input.count(text) }],
    finish: null,
    error: null,
    usage: null,
    createdAt: first.createdAt,
    metadata: { type: READ_FIT_MARKER_METADATA_TYPE, messagesOmitted: input.omitted.length },
    summary: true,
    compactionId: null,
  };
}
