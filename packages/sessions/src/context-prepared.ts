import {
  buildSummaryMessages,
  isPinnedMessage,
  preparedDraftUsable,
  type Message,
  type Policy,
} from '@compactor/core';
import { findPreparedSummary, type DbOrTx, type SessionRow } from '@compactor/db';
import { parseSummaryDraft, preparedSettingsKey } from '@compactor/workflow';

/** The view with a ready prepared draft in place of the prefix it covers. */
export interface PreparedView {
  draftId: string;
  messages: Message[];
}

/**
 * The session's view with its prepared draft's summary in place of what the draft covers, when
 * the draft is ready and core's `preparedDraftUsable` says the compaction the trigger starts would
 * finalize it: pinned system messages, the summary messages as finalize writes them, then every
 * message from the draft's cut on. `null` otherwise. One read: the draft's row.
 */
export async function preparedView(
  db: DbOrTx,
  session: SessionRow,
  policy: Policy,
  view: readonly Message[],
  compaction: { latestCompletedId: string | null; activeCompactionId: string | null },
  count: (text: string) => number,
): Promise<PreparedView | null> {
  const row = await findPreparedSummary(db, session.pk);
  if (!row || row.status !== 'ready' || row.cutSeq === null || row.settingsKey === null) return null;
  // Only a draft the finalizing compaction would take: one of the summary version it reads.
  const draft = parseSummaryDraft(row.outcome);
  if (draft === null || draft.summaryText === null) return null;
  const pinned = (message: Message) => policy.pinSystemMessages && isPinnedMessage(message);
  const first = view.find((message) => !message.summary && !pinned(message));
  const last = view.at(-1);
  if (last === undefined) return null;
  const verdict = preparedDraftUsable(
    {
      baseCompactionId: row.baseCompactionId,
      cutSeq: row.cutSeq,
      changedSeq: row.changedSeq,
      settingsKey: row.settingsKey,
    },
    {
      latestCompletedId: compaction.latestCompletedId,
      settingsKey: preparedSettingsKey(session),
      reason: 'auto',
      strategy: policy.strategy,
      force: false,
      instructions: null,
      keepRecentTokens: null,
      coversThroughSeq: last.seq,
      firstUnsummarizedSeq: first?.seq ?? null,
    },
  );
  if (!verdict.usable) return null;

  const cutSeq = row.cutSeq;
  const { summaryText, messagesCompacted, fileOps } = draft;
  // Named after the compaction that will finalize the draft when there is one, as finalize names them.
  const compactionId = compaction.activeCompactionId ?? `prepared-${row.id}`;
  const summaries = buildSummaryMessages({
    style: policy.summaryMessage,
    summaryText,
    compactionId,
    auto: true,
    messagesCompacted,
    fileOps,
    createdAt: (row.preparedAt ?? row.requestedAt).toISOString(),
    countTokens: count,
    // Not stored: they stand where the last message they cover stood.
  }).map((message) => ({ ...message, seq: cutSeq - 1 }));
  return {
    draftId: row.id,
    messages: [
      ...view.filter((message) => pinned(message) && message.seq < cutSeq),
      ...summaries,
      // Pinned messages from the cut on stay where they are, as the view keeps them.
      ...view.filter((message) => !message.summary && message.seq >= cutSeq),
    ],
  };
}
