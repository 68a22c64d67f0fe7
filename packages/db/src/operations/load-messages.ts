import type { CompactionBoundary, Message } from '@compactor/core';
import type { DbOrTx } from '../client';
import { boundaryFromRow, messagesFromRows, type CompactionRow } from '../mappers';
import { selectContextRows } from '../queries/context-rows';
import { listMessages } from '../queries/messages';
import { listPartsOfMessages } from '../queries/parts';

/** The stored rows of a context view, before core renders them (placeholders, interrupted calls). */
export interface ContextRows {
  /** The latest completed compaction's summary messages and every message from its boundary on. */
  messages: Message[];
  /** That compaction, or null when the session has none. */
  compaction: CompactionBoundary | null;
}

/**
 * Loads the rows of the context view: only what the model will see is read (the filter runs in
 * SQL), never the whole history, and no pruned output's text (the model sees the placeholder).
 * Rendering (placeholders, summary first) is core's job. One statement, so one snapshot: a
 * compaction that completes meanwhile is seen whole or not at all. `latestCompleted`: the
 * session's latest completed compaction, when the caller holds it and none can complete
 * meanwhile (the worker running the session's only active one), which is returned instead.
 */
export async function loadContextRows(
  db: DbOrTx,
  sessionPk: number,
  options: {
    pinSystemMessages?: boolean;
    latestCompleted?: CompactionRow | null;
  } = {},
): Promise<ContextRows> {
  const held = options.latestCompleted;
  const rows = await selectContextRows(db, sessionPk, {
    pinSystemMessages: options.pinSystemMessages ?? true,
  });
  return {
    messages: messagesFromRows(rows.messages, rows.parts),
    compaction: held === undefined ? rows.compaction : held && boundaryFromRow(held),
  };
}

/** A page of the raw history with parts, and the cursor of the next page. */
export async function loadHistoryPage(
  db: DbOrTx,
  sessionPk: number,
  page: { afterSeq: number; limit: number },
): Promise<{ messages: Message[]; nextAfterSeq: number | null }> {
  const rows = await listMessages(db, sessionPk, { afterSeq: page.afterSeq, limit: page.limit + 1 });
  const pageRows = rows.slice(0, page.limit);
  const parts = await listPartsOfMessages(
    db,
    pageRows.map((r) => r.pk),
  );
  const messages = messagesFromRows(pageRows, parts);
  return { messages, nextAfterSeq: rows.length > page.limit ? (messages.at(-1)?.seq ?? null) : null };
}
