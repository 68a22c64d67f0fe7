/**
 * The context view's rows kept in this process, per session, so that the next read of the view
 * (a drop-in agent's next turn, a client's next GET /context) parses and maps only the messages
 * that changed since: the one statement still reads the view's bounds and every message's
 * version in its snapshot, and sends the rows of those whose version this memo does not hold
 * (db `selectContextDelta`). A message is reused only under the exact version it was read at,
 * so what is served is what a full read would give, byte for byte; forgetting (a restart,
 * another replica, the budget) costs a full read, never a different answer.
 */
import type { Message } from '@compactor/core';
import { messagesFromRows, selectContextDelta, type ContextRows, type DbOrTx } from '@compactor/db';

/** What the memos may hold together, in characters of the kept messages (the API heap is 640 MiB, the element memos take 48 Mi characters). */
export const CONTEXT_MEMO_BUDGET = 32 * 1024 * 1024;

/** A session's view is kept only below this share of the budget. */
const LARGEST_SHARE = 4;

interface ViewMemo {
  pinSystemMessages: boolean;
  /** Each message of the view as last read, by its version. */
  byVersion: Map<string, Message>;
  weight: number;
}

/**
 * The memos, by session pk, newest last (a Map keeps insertion order), dropped oldest first past
 * the budget. The messages they hand out are shared between reads: readers treat a view's
 * messages as immutable (core's assembly, fit and rendering return new objects).
 */
export class ContextMemos {
  private readonly memos = new Map<number, ViewMemo>();
  private held = 0;

  constructor(private readonly budget = CONTEXT_MEMO_BUDGET) {}

  /**
   * The view's rows (as db `loadContextRows` gives them) in one statement, reusing the messages
   * read last time whose version has not changed.
   */
  async load(db: DbOrTx, sessionPk: number, pinSystemMessages: boolean): Promise<ContextRows> {
    const memo = this.memos.get(sessionPk);
    const kept = memo?.pinSystemMessages === pinSystemMessages ? memo.byVersion : null;
    const rows = await selectContextDelta(db, sessionPk, {
      pinSystemMessages,
      known: kept ? [...kept.keys()] : [],
    });
    const fresh = new Map<number, Message>();
    const read = messagesFromRows(rows.messages, rows.parts);
    // messagesFromRows orders by seq, and so are the rows sorted here: the same index in both.
    const sorted = [...rows.messages].sort((a, b) => a.seq - b.seq);
    sorted.forEach((row, i) => fresh.set(row.pk, read[i]!));
    const byVersion = new Map<string, Message>();
    let weight = 0;
    for (const version of rows.versions) {
      const pk = Number(version.slice(0, version.indexOf(':')));
      const message = fresh.get(pk) ?? kept?.get(version);
      // The statement sends the rows of every version it was not told of: a miss is a bug.
      if (message === undefined) throw new Error(`context memo: message ${pk} came without its rows`);
      byVersion.set(version, message);
      weight += weightOf(message);
    }
    this.keep(sessionPk, { pinSystemMessages, byVersion, weight });
    return {
      messages: [...byVersion.values()].sort((a, b) => a.seq - b.seq),
      compaction: rows.compaction,
    };
  }

  /** Forgets a session's view (for tests). */
  forget(sessionPk: number): void {
    const memo = this.memos.get(sessionPk);
    if (!memo) return;
    this.memos.delete(sessionPk);
    this.held -= memo.weight;
  }

  /** Characters held (for tests). */
  get size(): number {
    return this.held;
  }

  private keep(sessionPk: number, memo: ViewMemo): void {
    this.forget(sessionPk);
    if (memo.weight * LARGEST_SHARE > this.budget) return;
    this.memos.set(sessionPk, memo);
    this.held += memo.weight;
    for (const [oldest, kept] of this.memos) {
      if (this.held <= this.budget) break;
      this.memos.delete(oldest);
      this.held -= kept.weight;
    }
  }
}

/** A message's characters, roughly: four a stored token, and a file's URL (a data URL may be long). */
function weightOf(message: Message): number {
  let weight = 64;
  for (const part of message.parts) {
    weight += 32 + 4 * part.tokens;
    if (part.type === 'file') weight += part.url.length;
  }
  return weight;
}

/** The process's memos (one per process: a cache of what the database says, checked on every read). */
export const contextMemos = new ContextMemos();
