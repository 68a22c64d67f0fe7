import type { CompactionBoundary, Message } from '@compactor/core';
import type { Db, DbOrTx } from '../client';
import { boundaryFromRow, messagesFromRows, type CompactionRow } from '../mappers';
import { findLatestCompletedCompaction } from '../queries/compactions';
import { listContextMessages, listMessages } from '../queries/messages';
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
 * Rendering (placeholders, summary first) is core's job. The reads share one snapshot, so a
 * compaction that completes meanwhile is seen whole or not at all; `snapshot: false` skips the
 * transaction for a caller that knows no compaction can complete meanwhile (the worker running
 * the session's only active one), which may also pass the latest completed one it read.
 */
export async function loadContextRows(
  db: Db,
  sessionPk: number,
  options: {
    pinSystemMessages?: boolean;
    snapshot?: boolean;
    /** The latest completed compaction, when the caller holds it and none can complete meanwhile. */
    latestCompleted?: CompactionRow | null;
  } = {},
): Promise<ContextRows> {
  const load = async (tx: DbOrTx): Promise<ContextRows> => {
    const rows = await listContextMessages(tx, sessionPk, options);
    const compaction =
      options.latestCompleted !== undefined
        ? options.latestCompleted
        : await findLatestCompletedCompaction(tx, sessionPk);
    const parts = await listPartsOfMessages(
      tx,
      rows.map((r) => r.pk),
      { omitPrunedOutputs: true },
    );
    return {
      messages: messagesFromRows(rows, parts),
      compaction: compaction ? boundaryFromRow(compaction) : null,
    };
  };
  if (options.snapshot === false) return load(db);
  return db.transaction(load, { isolationLevel: 'repeatable read', accessMode: 'read only' });
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
