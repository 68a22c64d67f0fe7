/**
 * The truncate strategy (Opal's `:truncate`): a summary written without an LLM, used when no
 * summarizer is configured or as the fallback after the summarizer's last failed attempt.
 */
import { extractFileOps, mergeFileOps, withFileOps, type FileOps, type FileToolNames } from './file-ops';
import type { Message, Role } from './model';
import {
  countLeadingSummaryMessages,
  extractPreviousFileOps,
  extractPreviousSummary,
} from './summary-messages';

const ROLE_ORDER: readonly Role[] = ['user', 'assistant', 'system'];

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
}

/**
 * `[Compacted N messages: 4 user, 6 assistant; 9 tool calls]` followed by the `<read-files>` /
 * `<modified-files>` blocks. When the range starts with a previous compaction's summary, that
 * summary is kept above the line instead of being counted: truncating must not forget what an
 * earlier cycle already summarised.
 */
export function buildTruncateSummary(
  messages: readonly Message[],
  options: TruncateSummaryOptions = {},
): string {
  const previousSummary = options.previousSummary?.trim() || extractPreviousSummary(messages);
  const compacted = messages.slice(countLeadingSummaryMessages(messages));
  const fileOps =
    options.fileOps ??
    mergeFileOps(extractPreviousFileOps(messages), extractFileOps(compacted, options.fileTools));

  const roleCounts = ROLE_ORDER.map(
    (role) => [role, compacted.filter((m) => m.role === role).length] as const,
  )
    .filter(([, count]) => count > 0)
    .map(([role, count]) => `${count} ${role}`);
  const toolCalls = compacted.reduce(
    (total, message) => total + message.parts.filter((part) => part.type === 'tool').length,
    0,
  );
  const details = [roleCounts.join(', '), toolCalls > 0 ? plural(toolCalls, 'tool call') : '']
    .filter((detail) => detail !== '')
    .join('; ');
  const line = `[Compacted ${plural(compacted.length, 'message')}${details === '' ? '' : `: ${details}`}]`;

  const text = previousSummary === null ? line : `${previousSummary}\n\n${line}`;
  return withFileOps(text, fileOps);
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
