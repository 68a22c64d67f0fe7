/**
 * The truncate strategy (Opal's `:truncate`): a summary written without an LLM, used when no
 * summarizer is configured or as the fallback after the summarizer's last failed attempt.
 */
import { extractFileOps, mergeFileOps, type FileOps, type FileToolNames } from './file-ops';
import type { Message, Role } from './model';
import { stripPinnedSections } from './pinned-section';
import { DEFAULT_POLICY } from './policy';
import {
  collectSummaryFacts,
  verifySummary,
  type CollectFactsOptions,
  type SummaryCheck,
  type SummaryFacts,
} from './summary-check';
import {
  countLeadingSummaryMessages,
  extractPreviousFileOps,
  extractPreviousSummary,
} from './summary-messages';

const ROLE_ORDER: readonly Role[] = ['user', 'assistant', 'system'];

/** What the truncate line counts of the compacted messages (not the leading summary messages). */
export interface CompactedCounts {
  messages: number;
  roles: Record<Role, number>;
  toolCalls: number;
}

/** {@link CompactedCounts} of `messages` (all of them: leave the leading summary messages out first). */
export function countCompacted(messages: readonly Message[]): CompactedCounts {
  const counts: CompactedCounts = { messages: 0, roles: { user: 0, assistant: 0, system: 0 }, toolCalls: 0 };
  return addCompactedCounts(counts, messages);
}

/** `counts` with `messages` added (in place: a range read window by window is counted as it is read). */
export function addCompactedCounts(counts: CompactedCounts, messages: readonly Message[]): CompactedCounts {
  for (const message of messages) {
    counts.messages += 1;
    counts.roles[message.role] += 1;
    for (const part of message.parts) if (part.type === 'tool') counts.toolCalls += 1;
  }
  return counts;
}

/**
 * Overrides for {@link buildTruncateSummary}; by default the file ops and the previous summary are
 * read from `messages`.
 */
export interface TruncateSummaryOptions {
  /** File ops to list; by default those of `messages`, merged with the previous summary's. */
  fileOps?: FileOps | null;
  /** Tool names recognised as file tools when `fileOps` is not given. */
  fileTools?: FileToolNames;
  /**
   * The summary to keep above the line instead of the range's own previous summary: e.g. the
   * running summary a chunked summarizer had paid for when a later chunk failed
   * (`InvalidSummaryError.partialSummary`), with `messages` then being the part it did not cover.
   */
  previousSummary?: string | null;
  /**
   * The facts to pin (summary-check.ts); by default those of `messages`, with `factsOptions`
   * (the request's instructions, the kept messages). The LLM path's fallback passes the facts of
   * the whole range, so its truncate text pins exactly what a checked summary would.
   */
  facts?: SummaryFacts;
  factsOptions?: CollectFactsOptions;
  /** The summary's token budget, which bounds the pinned section; default the policy default's. */
  budgetTokens?: number;
  /**
   * The compacted messages' counts when `messages` does not hold them all (a range too long to
   * hold, read window by window): `messages` then only gives the leading summary messages.
   */
  counts?: CompactedCounts;
}

/**
 * `[Compacted N messages: 4 user, 6 assistant; 9 tool calls]`, the pinned section (the goal, the
 * constraints, the instructions and the latest request: an LLM-free summary keeps the user's own
 * words, like a checked one), then the `<read-files>` / `<modified-files>` blocks. When the range
 * starts with a previous compaction's summary, that summary is kept above the line instead of
 * being counted: truncating must not forget what an earlier cycle already summarised.
 */
export function buildTruncateSummary(
  messages: readonly Message[],
  options: TruncateSummaryOptions = {},
): string {
  return checkTruncateSummary(messages, options).text;
}

/** {@link buildTruncateSummary} with what its check pinned (counts, for the compaction record). */
export function checkTruncateSummary(
  messages: readonly Message[],
  options: TruncateSummaryOptions = {},
): SummaryCheck {
  const previousSummary = options.previousSummary?.trim() || extractPreviousSummary(messages);
  const compacted = messages.slice(countLeadingSummaryMessages(messages));
  const fileOps =
    options.fileOps ??
    mergeFileOps(extractPreviousFileOps(messages), extractFileOps(compacted, options.fileTools));

  const counts = options.counts ?? countCompacted(compacted);
  const roleCounts = ROLE_ORDER.map((role) => [role, counts.roles[role]] as const)
    .filter(([, count]) => count > 0)
    .map(([role, count]) => `${count} ${role}`);
  const toolCalls = counts.toolCalls;
  const details = [roleCounts.join(', '), toolCalls > 0 ? plural(toolCalls, 'tool call') : '']
    .filter((detail) => detail !== '')
    .join('; ');
  const line = `[Compacted ${plural(counts.messages, 'message')}${details === '' ? '' : `: ${details}`}]`;

  // The previous summary's own pinned section is replaced by this one, never repeated above the line.
  const above = previousSummary === null ? '' : stripPinnedSections(previousSummary);
  const text = above === '' ? line : `${above}\n\n${line}`;
  const facts =
    options.facts ??
    collectSummaryFacts(messages, { previousSummary: options.previousSummary, ...options.factsOptions });
  return verifySummary(text, facts, {
    budgetTokens: options.budgetTokens ?? DEFAULT_POLICY.summarizer.maxOutputTokens,
    fileOps,
  });
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
