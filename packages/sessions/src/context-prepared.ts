import {
  buildSummaryMessages,
  isPinnedMessage,
  preparedDraftUsable,
  type Message,
  type Policy,
} from '@compactor/core';
import { contentHash, findPreparedSummary, sessionModel, type DbOrTx, type SessionRow } from '@compactor/db';
import { z } from 'zod';

/**
 * The parts of a prepared draft's outcome that its summary messages are built from. The shape is
 * workflow's `SummaryDraftSchema` (version 2, steps/summary-writing.ts): a draft of another
 * version is not served here, as workflow would not finalize it either.
 */
const DraftSummary = z.object({
  version: z.literal(2),
  outcome: z.object({
    kind: z.literal('summary'),
    summaryText: z.string(),
    messagesCompacted: z.number().int(),
    fileOps: z.object({
      readFiles: z.array(z.string()),
      modifiedFiles: z.array(z.string()),
      readFilesOmitted: z.number().int().optional(),
      modifiedFilesOmitted: z.number().int().optional(),
    }),
  }),
});

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
  const draft = DraftSummary.safeParse(row.outcome);
  if (!draft.success) return null;
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
      // workflow's preparedSettingsKey: the policy input and model the draft was written under.
      settingsKey: contentHash({ policy: session.policy, model: sessionModel(session) }),
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
  const { summaryText, messagesCompacted, fileOps } = draft.data.outcome;
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
