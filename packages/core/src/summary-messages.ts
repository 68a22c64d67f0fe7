/**
 * The messages a compaction writes, in the three styles the references use, and how the next cycle
 * reads them back (previous summary text and file ops).
 *
 * - `opencode` (default): a user message carrying a `compaction` part (the request marker), then
 *   an assistant message with `summary: true` and finish `stop` holding the summary.
 * - `user` (klaude-code): one user message opening {@link USER_SUMMARY_PREFIX}.
 * - `opal` (Opal): one user message opening {@link OPAL_SUMMARY_PREFIX}, the prefix Opal looks
 *   for to find the previous summary.
 * - `system` (docs/PRESETS.md, `topic`): one system message `[History Summary - N earlier messages]`.
 *
 * All of them are stored with `summary: true` and the compaction's id; the context view shows
 * only the latest completed compaction's ones.
 */
import { fileOpsFromMetadata, mergeFileOps, type FileOps } from './file-ops';
import { LEDGER_BLOCK_TAG, stripFileOpsBlocks, withFileOps } from './file-ops-render';
import { renderLedger } from './ledger/render';
import type { ArtifactLedger } from './ledger/types';
import { assertNever, type Message } from './model';
import type { Policy } from './policy';
import { estimateTokens, type CountTokens } from './tokens';

/** The policy's `summaryMessage`: `opencode`, `user` or `system`. */
export type SummaryMessageStyle = Policy['summaryMessage'];

/** A message as a compaction hands it to the store, which assigns `seq`. */
export type NewMessage = Omit<Message, 'seq'>;

/** Opening of the `user`-style summary message (klaude-code and pi's wording). */
export const USER_SUMMARY_PREFIX =
  'The conversation history before this point was compacted into the following summary:';

/**
 * Opening of Opal's summary message. Opal recognises a previous summary by its `[Conversation
 * summary` prefix (Opal's iterative updates, docs/PRESETS.md), so a history written here stays readable by it.
 */
export const OPAL_SUMMARY_PREFIX = '[Conversation summary — older messages were compacted]';

/**
 * How the model sees the OpenCode-style request marker. OpenCode renders it as "What did we do so
 * far?", which models answer again after the summary; this reads as a note from the system that
 * needs no reply.
 */
export const COMPACTION_MARKER_TEXT =
  '[Context compacted] Earlier messages of this conversation were replaced by the summary in the next message. ' +
  'This note was inserted by the system: it is not a request from the user and needs no reply.';

/** `metadata.type` of the message that carries a compaction's summary text and file ops. */
export const SUMMARY_METADATA_TYPE = 'compaction_summary';

/** `metadata.type` of the OpenCode-style request marker. */
export const REQUEST_METADATA_TYPE = 'compaction_request';

/** Heading of the `system`-style summary message (docs/PRESETS.md, `topic`). */
export function historySummaryHeading(messagesCompacted: number): string {
  return `[History Summary - ${messagesCompacted} earlier messages]`;
}

/** What {@link buildSummaryMessages} needs; `style` is the policy's `summaryMessage`. */
export interface SummaryMessagesInput {
  style: SummaryMessageStyle;
  /** The summary body (LLM output, truncate text or topic summary), without file-op blocks. */
  summaryText: string;
  compactionId: string;
  /** Whether the compaction was triggered automatically (the `compaction` part's flag). */
  auto: boolean;
  /** How many messages the summary replaces (shown by the `system` style, kept in metadata). */
  messagesCompacted: number;
  /**
   * Cumulative file ops: kept in metadata for the next cycle, and rendered after the summary
   * unless `ledgerBlock` is given.
   */
  fileOps?: FileOps | null;
  /**
   * The session's ledger as {@link fitLedgerBlock} rendered it: shown after the summary in place
   * of the file lists ('' shows neither).
   */
  ledgerBlock?: string;
  /** ISO time for `createdAt` (core takes no clock). */
  createdAt: string;
  /**
   * Message ids. Default `${compactionId}-request` / `${compactionId}-summary`: deterministic, so
   * a retried finalize step writes the same messages (appends are idempotent by id).
   */
  ids?: { request?: string; summary?: string };
  /** Token count of a text part (an exact tokenizer); defaults to {@link estimateTokens}. */
  countTokens?: CountTokens;
}

/**
 * The message(s) a compaction writes, in order. The summary message's `metadata` carries
 * `{ type: 'compaction_summary', compactionId, messagesCompacted, readFiles, modifiedFiles,
 * readFilesOmitted, modifiedFilesOmitted }`: the newest paths of each list and how many more.
 * None carries `usage`: the summarizer's usage belongs to the compaction row, and a huge prompt
 * count on a message would read as the session's current size to the token estimate.
 */
export function buildSummaryMessages(input: SummaryMessagesInput): NewMessage[] {
  const countTokens = input.countTokens ?? estimateTokens;
  const fileOps = mergeFileOps(input.fileOps);
  const body =
    input.ledgerBlock === undefined
      ? withFileOps(input.summaryText, fileOps)
      : [stripFileOpsBlocks(input.summaryText), input.ledgerBlock].filter((text) => text !== '').join('\n\n');
  const summaryId = input.ids?.summary ?? `${input.compactionId}-summary`;
  const base = {
    finish: null,
    error: null,
    usage: null,
    createdAt: input.createdAt,
    summary: true,
    compactionId: input.compactionId,
  } satisfies Partial<NewMessage>;
  const summaryMetadata = {
    type: SUMMARY_METADATA_TYPE,
    compactionId: input.compactionId,
    messagesCompacted: input.messagesCompacted,
    readFiles: fileOps.readFiles,
    modifiedFiles: fileOps.modifiedFiles,
    // Bounded lists (file-ops.ts): how many older paths are counted, not listed.
    readFilesOmitted: fileOps.readFilesOmitted ?? 0,
    modifiedFilesOmitted: fileOps.modifiedFilesOmitted ?? 0,
  };
  const textMessage = (role: Message['role'], text: string): NewMessage => ({
    ...base,
    id: summaryId,
    role,
    parts: [{ type: 'text', text, tokens: countTokens(text) }],
    metadata: summaryMetadata,
  });

  switch (input.style) {
    case 'opencode':
      return [
        {
          ...base,
          id: input.ids?.request ?? `${input.compactionId}-request`,
          role: 'user',
          parts: [{ type: 'compaction', auto: input.auto, tokens: countTokens(COMPACTION_MARKER_TEXT) }],
          metadata: { type: REQUEST_METADATA_TYPE, compactionId: input.compactionId },
        },
        // OpenCode's summary message names the hidden agent that wrote it.
        {
          ...textMessage('assistant', body),
          finish: 'stop',
          metadata: { ...summaryMetadata, mode: 'compaction', agent: 'compaction' },
        },
      ];
    case 'user':
      return [textMessage('user', `${USER_SUMMARY_PREFIX}\n\n<summary>\n${body}\n</summary>`)];
    case 'opal':
      return [textMessage('user', `${OPAL_SUMMARY_PREFIX}\n\n${body}`)];
    case 'system':
      return [textMessage('system', `${historySummaryHeading(input.messagesCompacted)}\n\n${body}`)];
    default:
      return assertNever(input.style, 'summary message style');
  }
}

/** The ledger wrapped in its block tag, as a summary message shows it. */
function ledgerBlockOf(rendered: string): string {
  return rendered === '' ? '' : `<${LEDGER_BLOCK_TAG}>\n${rendered}\n</${LEDGER_BLOCK_TAG}>`;
}

/**
 * The session's ledger as the block a summary message shows in place of the file lists: modified
 * files before read ones, newest first, grouped by directory, commands with their last outcome,
 * what does not fit named with its recall call; the block, tags included, at most `maxTokens` by
 * `count` ('' when nothing fits or the ledger is empty).
 */
export function fitLedgerBlock(
  ledger: ArtifactLedger,
  maxTokens: number,
  count: (text: string) => number,
): string {
  return ledgerBlockOf(renderLedger(ledger, { maxTokens, count: (text) => count(ledgerBlockOf(text)) }));
}

/** Openings that mark a message as a summary when it lacks the `summary` flag (imported histories). */
const SUMMARY_OPENINGS: readonly RegExp[] = [
  new RegExp(`^${USER_SUMMARY_PREFIX.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*`),
  /^\[History Summary - \d+ earlier messages?\]\s*/,
  /^\[Conversation summary[^\]\n]*\]\s*/,
];

function textOf(message: Pick<Message, 'parts'>): string {
  return message.parts
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n')
    .trim();
}

function startsWithSummaryOpening(message: Message): boolean {
  const text = textOf(message);
  return SUMMARY_OPENINGS.some((opening) => opening.test(text));
}

/**
 * How many messages at the start of `messages` belong to a previous compaction: those flagged
 * `summary`, or a first message that opens like a summary (histories imported from Opal or
 * klaude-code). These are what a new compaction folds in as its "previous summary".
 */
export function countLeadingSummaryMessages(messages: readonly Message[]): number {
  let count = 0;
  while (count < messages.length && messages[count]?.summary === true) count += 1;
  if (count === 0 && messages[0] !== undefined && startsWithSummaryOpening(messages[0])) return 1;
  return count;
}

/** The summary body of one summary message: opening, `<summary>` wrapper and file-op blocks removed. */
function summaryBody(message: Message): string {
  let text = textOf(message);
  for (const opening of SUMMARY_OPENINGS) text = text.replace(opening, '');
  const wrapped = /^<summary>\s*([\s\S]*?)\s*<\/summary>$/.exec(text.trim());
  return stripFileOpsBlocks(wrapped?.[1] ?? text);
}

/**
 * The summary text when the compacted range starts with a previous compaction's summary (Opal's
 * iterative update), without its heading or file-op blocks (those are re-rendered from
 * metadata). `null` when the range starts with ordinary messages.
 */
export function extractPreviousSummary(messages: readonly Message[]): string | null {
  const bodies = messages
    .slice(0, countLeadingSummaryMessages(messages))
    .map(summaryBody)
    .filter((body) => body !== '');
  return bodies.length === 0 ? null : bodies.join('\n\n');
}

/**
 * How many messages the previous compaction's summary covers, as its metadata (or, for a
 * `system`-style summary without it, its `[History Summary - N earlier messages]` heading) says;
 * `null` when neither does. A summary carried forward unchanged still covers only those.
 */
export function previousSummaryMessageCount(messages: readonly Message[]): number | null {
  for (const message of messages.slice(0, countLeadingSummaryMessages(messages)).reverse()) {
    const counted = (message.metadata as { messagesCompacted?: unknown } | null | undefined)
      ?.messagesCompacted;
    if (typeof counted === 'number' && Number.isInteger(counted) && counted >= 0) return counted;
    const heading = /^\[History Summary - (\d+) earlier messages\]/.exec(textOf(message));
    if (heading) return Number(heading[1]);
  }
  return null;
}

/** The file ops the previous compaction's summary kept in its metadata, or `null`. */
export function extractPreviousFileOps(messages: readonly Message[]): FileOps | null {
  const found = messages
    .slice(0, countLeadingSummaryMessages(messages))
    .map((message) => fileOpsFromMetadata(message.metadata))
    .filter((ops) => ops !== null);
  return found.length === 0 ? null : mergeFileOps(...found);
}
