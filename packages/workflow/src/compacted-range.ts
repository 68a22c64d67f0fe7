import {
  addCompactedCounts,
  collectSummaryFacts,
  countCompacted,
  countLeadingSummaryMessages,
  extractFileOps,
  extractPreviousFileOps,
  isUserRequest,
  ledgerOfMessages,
  mergeFileOps,
  mergeLedgers,
  storedTokens,
  emptyLedger,
  type ArtifactLedger,
  type CompactedCounts,
  type FileOps,
  type FileToolNames,
  type Message,
} from '@compactor/core';
import { arraySource, concatSources, pacer, type MessageSource } from '@compactor/llm';
import type { CoveredBody } from './covered-history';
import { FileOpsRanking } from './file-ops-ranking';

/**
 * What a compaction compacts (the previous summary's messages first), as the summary writing
 * needs it whatever its size: the messages to hand the summarizer (`source`, read window by
 * window when they are not held), and what was learned of them in one pass — their file ops,
 * how many there are, what stands for them in the summary's facts.
 */
export interface CompactedRange {
  /** The leading summary messages, then the compacted messages. */
  source: MessageSource;
  /** `source` without a split turn's prefix: what the history summary covers. */
  historySource: MessageSource;
  /** User requests of the messages not held (none when all are), for facts read from a held view. */
  unheldRequests: Message[];
  /** The leading summary messages (the previous summary). */
  leading: Message[];
  /**
   * The messages core's `collectSummaryFacts` reads the same facts from as from the whole range:
   * the leading summary messages and the compacted messages' user requests, in order.
   */
  factsView: Message[];
  /** The previous summary's file lists merged with the compacted messages' (`fileOpsOf`). */
  fileOps: FileOps;
  /** The artifact ledger of the compacted messages (core `ledgerOfMessages`), read in the same pass. */
  ledger: ArtifactLedger;
  /** Compacted messages (not the leading summaries). */
  messagesCompacted: number;
  /** The truncate line's counts of the compacted messages from index `from` of `source` on. */
  countsFrom(from: number): Promise<CompactedCounts>;
}

/** A range held in memory: `history`, then a split turn's `prefix` (topic mode passes none). */
export function heldRange(history: Message[], prefix: Message[], fileTools?: FileToolNames): CompactedRange {
  const messages = [...history, ...prefix];
  const leadingCount = countLeadingSummaryMessages(messages);
  const compacted = messages.filter((m) => !m.summary);
  return {
    source: arraySource(messages),
    historySource: arraySource(history),
    unheldRequests: [],
    leading: messages.slice(0, leadingCount),
    factsView: messages,
    fileOps: mergeFileOps(extractPreviousFileOps(messages), extractFileOps(compacted, fileTools)),
    ledger: ledgerOfMessages(compacted, fileTools ? { fileTools } : {}),
    messagesCompacted: compacted.length,
    countsFrom: async (from) => countCompacted(messages.slice(Math.max(from, leadingCount))),
  };
}

/**
 * A range whose middle is not held: `leading` summary messages, the covered view's `body` (read
 * window by window, once here for its file ops, counts and requests, again by the summarizer),
 * then the held messages: the rest of the history, and a split turn's `prefix`. Yields to the
 * event loop between windows; a cancelled compaction (`signal`) stops reading.
 */
export async function streamedRange(
  leading: Message[],
  body: CoveredBody,
  held: { history: Message[]; prefix: Message[] },
  options: { fileTools?: FileToolNames | undefined; signal?: AbortSignal | undefined } = {},
): Promise<CompactedRange> {
  const { fileTools, signal } = options;
  const rest = [...held.history, ...held.prefix];
  const ranking = new FileOpsRanking(fileTools);
  const counts = countCompacted([]);
  const requests = new FactRequests();
  const ledgerOptions = fileTools ? { fileTools } : {};
  // Merging the ledgers of consecutive windows gives the ledger of the whole range (core merge).
  let ledger = emptyLedger();
  let stored = 0;
  const pace = pacer();
  for await (const window of bodyWindows(body, undefined, { outputs: false })) {
    ranking.add(window);
    ledger = mergeLedgers(ledger, ledgerOfMessages(window, ledgerOptions));
    addCompactedCounts(counts, window);
    stored += storedTokens(window);
    for (const message of window) requests.add(message);
    // An AbortError, whatever the signal's reason: the workflow rethrows those (errors.ts isAbort).
    if (signal?.aborted) throw new DOMException('the compaction was cancelled', 'AbortError');
    await pace();
  }
  ranking.add(rest);
  ledger = mergeLedgers(
    ledger,
    ledgerOfMessages(
      rest.filter((m) => !m.summary),
      ledgerOptions,
    ),
  );
  const bodySource = keysetSource(body, counts.messages, stored);
  return {
    source: concatSources(arraySource(leading), bodySource, arraySource(rest)),
    historySource: concatSources(arraySource(leading), bodySource, arraySource(held.history)),
    unheldRequests: requests.list(),
    leading,
    factsView: [...leading, ...requests.list(), ...rest],
    fileOps: mergeFileOps(extractPreviousFileOps(leading), ranking.result()),
    ledger,
    messagesCompacted: counts.messages + rest.length,
    async countsFrom(from) {
      const inBody = from - leading.length;
      if (inBody >= counts.messages) return countCompacted(rest.slice(inBody - counts.messages));
      if (inBody <= 0) return addCompactedCounts(structuredClone(counts), rest);
      const tally = countCompacted([]);
      let index = 0;
      for await (const window of bodyWindows(body, undefined, { outputs: false })) {
        if (index + window.length > inBody)
          addCompactedCounts(tally, window.slice(Math.max(0, inBody - index)));
        index += window.length;
        await pace();
      }
      return addCompactedCounts(tally, rest);
    },
  };
}

/**
 * The body's windows in seq order (keyset: each read starts after the last seq read); with
 * `outputs: false`, without the tool outputs (a pass that needs the calls, not their results).
 */
async function* bodyWindows(
  body: CoveredBody,
  afterSeq?: number,
  read?: { outputs: boolean },
): AsyncIterable<Message[]> {
  for (let after = afterSeq; ;) {
    const window = await body.window(after, read);
    if (window.length === 0) return;
    yield window;
    after = window.at(-1)!.seq;
  }
}

/**
 * The body as a source of `length` messages. A read from an index resumes after the last seq of
 * the window that ended there (the summarizer reads forward); any other index reads from the
 * first message and skips.
 */
function keysetSource(body: CoveredBody, length: number, stored: number): MessageSource {
  const seqBefore = new Map<number, number>();
  return {
    length,
    storedTokens: stored,
    async *windows(from) {
      const resume = seqBefore.get(from);
      let index = resume === undefined ? 0 : from;
      for await (const window of bodyWindows(body, resume)) {
        const end = index + window.length;
        seqBefore.set(end, window.at(-1)!.seq);
        if (end > from) yield index >= from ? window : window.slice(from - index);
        index = end;
      }
    },
  };
}

/**
 * The user requests a range's facts are read from (core `collectSummaryFacts`), kept as few as
 * give the same facts: the first (the goal), the last (the latest request) and those that state
 * a constraint. The others add nothing to the facts, and a long session has tens of thousands.
 */
class FactRequests {
  private first: Message | null = null;
  private last: Message | null = null;
  private readonly stating: Message[] = [];

  add(message: Message): void {
    if (!isUserRequest(message)) return;
    if (this.first === null) this.first = message;
    else if (collectSummaryFacts([message]).constraints.length > 0) this.stating.push(message);
    this.last = message;
  }

  /** In their order, each once. */
  list(): Message[] {
    return [...new Set([this.first, ...this.stating, this.last])].filter((m): m is Message => m !== null);
  }
}
