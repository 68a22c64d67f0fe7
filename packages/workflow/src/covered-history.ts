import { isTurnStart, type Message, type Policy } from '@compactor/core';
import { selectViewHead, selectViewWindow, type Db } from '@compactor/db';
import type { Attempt } from './attempt';

/** Messages one read of the covered view returns: about what a compaction holds of the history. */
export const COVERED_WINDOW_MESSAGES = 500;

/**
 * A compaction's covered view, read so that its size does not depend on the session's: the
 * pinned system messages and the previous summary, then its newest kept messages from a turn
 * start on (`view`), and the older kept messages between the two (`body`) left unread, to be
 * read window by window. `body` is null when `view` is the whole covered view.
 */
export interface CoveredHistory {
  view: Message[];
  body: CoveredBody | null;
}

/** The kept messages before the held tail: not pinned, not summaries, seq below `beforeSeq`. */
export interface CoveredBody {
  beforeSeq: number;
  /**
   * The next window after `afterSeq` (from the first kept message without it); `[]` at the end.
   * `outputs: false` leaves tool outputs unread (null).
   */
  window(afterSeq?: number, options?: { outputs: boolean }): Promise<Message[]>;
}

/** How the covered view is read: in windows of `windowMessages`, each one reported to `onWindow`. */
export interface CoveredReadOptions {
  windowMessages?: number;
  onWindow?: (messages: number) => void;
}

/**
 * Reads the covered view from its newest message back, a window at a time, until `settled`
 * says a plan made on what is held would be the same with the older messages too (the plan
 * looks no further back than a turn start it holds), or the view is read whole. `settled`
 * gets the view as held: pinned messages first, the previous summary, then the tail, which
 * always starts at a user turn when older messages are left out.
 */
export async function loadCoveredHistory(
  db: Db,
  attempt: Pick<Attempt, 'session' | 'coversThroughSeq' | 'latestCompleted'>,
  policy: Pick<Policy, 'pinSystemMessages'>,
  settled: (view: Message[]) => boolean,
  options: CoveredReadOptions = {},
): Promise<CoveredHistory> {
  const size = options.windowMessages ?? COVERED_WINDOW_MESSAGES;
  const sessionPk = attempt.session.pk;
  const { pinSystemMessages } = policy;
  const head = orderedHead(
    await selectViewHead(db, sessionPk, { pinSystemMessages, throughSeq: attempt.coversThroughSeq }),
    attempt.latestCompleted?.summaryMessageIds ?? [],
  );
  const window = async (request: {
    afterSeq?: number;
    beforeSeq?: number;
    order: 'asc' | 'desc';
    outputs?: boolean;
  }) => {
    const read = await selectViewWindow(db, sessionPk, { pinSystemMessages, limit: size, ...request });
    options.onWindow?.(read.length);
    return read;
  };
  let tail: Message[] = [];
  for (;;) {
    const older = await window({ beforeSeq: tail[0]?.seq ?? attempt.coversThroughSeq + 1, order: 'desc' });
    tail = [...older, ...tail];
    if (older.length < size) return { view: [...head, ...tail], body: null };
    const start = tail.findIndex(isTurnStart);
    if (start < 0) continue;
    const held = tail.slice(start);
    const view = [...head, ...held];
    if (!settled(view)) continue;
    const beforeSeq = held[0]!.seq;
    return {
      view,
      body: {
        beforeSeq,
        window: (afterSeq, read) =>
          window({ ...(afterSeq === undefined ? {} : { afterSeq }), ...read, beforeSeq, order: 'asc' }),
      },
    };
  }
}

/**
 * The head as the view orders it (core `assembleContext`): pinned system messages by seq, then
 * the previous compaction's summary messages in the order it lists them.
 */
function orderedHead(head: Message[], summaryIds: readonly string[]): Message[] {
  const rank = new Map(summaryIds.map((id, index) => [id, index]));
  const summaries = head
    .filter((m) => m.summary)
    .sort((a, b) => (rank.get(a.id) ?? a.seq) - (rank.get(b.id) ?? b.seq));
  return [...head.filter((m) => !m.summary), ...summaries];
}
