/**
 * The baseline a simpler service would use for the context view and the status: read the whole
 * history, page by page, and every compaction, then let core assemble or estimate it in JS.
 */
import type { Message } from '@compactor/core';
import { boundaryFromRow, listCompactions, loadHistoryPage, type Db } from '@compactor/db';

/** The baseline's read: every message of the session, page by page, and every compaction. */
export async function loadEverything(db: Db, sessionPk: number) {
  const all: Message[] = [];
  for (let afterSeq = 0; ;) {
    const page = await loadHistoryPage(db, sessionPk, { afterSeq, limit: 1000 });
    all.push(...page.messages);
    if (page.nextAfterSeq === null) break;
    afterSeq = page.nextAfterSeq;
  }
  const compactions = (await listCompactions(db, sessionPk, { limit: 1000 })).map(boundaryFromRow);
  return { all, compactions };
}
