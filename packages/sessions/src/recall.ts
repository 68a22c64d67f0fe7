import type { PolicyInput } from '@compactor/core';
import {
  DEFAULT_RECALL_LEDGER_LIMIT,
  DEFAULT_RECALL_LIMIT,
  ledgerCursor,
  ledgerCursorOffset,
  type RecallLedger,
  type RecallLedgerKind,
  MAX_RECALL_EXCERPT_LENGTH,
  type RecallMedia,
  type RecallOutput,
  type RecallQuery,
  type RecallResponse,
  type RecallSearch,
} from '@compactor/contract';
import {
  findRecallCall,
  findRecallMedia,
  searchRecall,
  selectLatestLedger,
  toDataUrl,
  type Db,
} from '@compactor/db';
import { resolveStoredPolicy } from '@compactor/workflow';
import type { z } from 'zod';
import { CallNotFound, CallOutputPurged, InvalidInput, MediaNotFound } from './errors';
import { requireSession, type SessionTarget } from './sessions';

/**
 * `GET /v1/sessions/:id/recall`: what compaction took out of the model's view, given back. By
 * call id, the stored result of the call a cleared marker names (`CallOutputPurged` once
 * retention purged it);
 * by query, passages of the history the model no longer sees verbatim (see db `searchRecall`);
 * by kind, one section of the artifact ledger in force (its latest completed compaction's), whole;
 * by media id, the image or document a media marker replaced.
 * Another tenant's session is not found like a missing one, so its call ids and words find nothing.
 */
export async function recall(
  db: Db,
  target: SessionTarget,
  query: z.output<typeof RecallQuery>,
): Promise<RecallResponse> {
  const session = await requireSession(db, target.tenantId, target.id);
  if (query.callId !== undefined) return recallCall(db, session.pk, query.callId);
  if (query.mediaId !== undefined) return recallMedia(db, target.tenantId, session.pk, query.mediaId);
  if (query.q !== undefined) {
    const { pinSystemMessages } = resolveStoredPolicy(session.policy as PolicyInput);
    return recallSearch(db, session.pk, query.q, query.limit ?? DEFAULT_RECALL_LIMIT, pinSystemMessages);
  }
  if (query.kind !== undefined) {
    const offset = query.cursor === undefined ? 0 : ledgerCursorOffset(query.cursor);
    if (offset === null) throw new InvalidInput('not a cursor this API wrote');
    return recallLedger(db, session.pk, query.kind, offset, query.limit ?? DEFAULT_RECALL_LEDGER_LIMIT);
  }
  // The contract's schema refuses this before it gets here.
  throw new InvalidInput('give exactly one of callId, q, kind and mediaId');
}

async function recallCall(db: Db, sessionPk: number, callId: string): Promise<RecallOutput> {
  const call = await findRecallCall(db, sessionPk, callId);
  if (!call) throw new CallNotFound();
  if (call.purgedAt !== null) {
    throw new CallOutputPurged(call.purgedAt);
  }
  return {
    kind: 'call',
    callId: call.callId,
    tool: call.tool,
    status: call.status,
    output: call.output,
    error: call.error,
    messageId: call.messageId,
    seq: call.seq,
    tokens: call.outputTokens,
    prunedAt: call.prunedAt?.toISOString() ?? null,
  };
}

/** The part a media marker names, its bytes back as a `data:` URL; 404 once nothing refers to them. */
async function recallMedia(
  db: Db,
  tenantId: string,
  sessionPk: number,
  mediaId: string,
): Promise<RecallMedia> {
  const found = await findRecallMedia(db, tenantId, sessionPk, mediaId);
  if (!found) throw new MediaNotFound();
  return {
    kind: 'media',
    mediaId: found.sha256,
    messageId: found.messageId,
    seq: found.seq,
    callId: found.callId,
    part: {
      type: 'file',
      mime: found.mime,
      filename: found.filename,
      url: toDataUrl(found.mime, found.data),
    },
    bytes: found.data.byteLength,
    width: found.width,
    height: found.height,
    tokens: found.tokens,
  };
}

async function recallSearch(
  db: Db,
  sessionPk: number,
  query: string,
  limit: number,
  pinSystemMessages: boolean,
): Promise<RecallSearch> {
  const results = await searchRecall(db, sessionPk, {
    query,
    limit,
    excerptChars: MAX_RECALL_EXCERPT_LENGTH,
    pinSystemMessages,
  });
  return { kind: 'search', query, results };
}

/**
 * One page of a ledger section, newest first. The ledger is one stored row (read whole): a page
 * is a slice of it, and the cursor the index where the next page starts.
 */
async function recallLedger(
  db: Db,
  sessionPk: number,
  kind: RecallLedgerKind,
  offset: number,
  limit: number,
): Promise<RecallLedger> {
  const stored = await selectLatestLedger(db, sessionPk);
  const ledger = stored?.ledger;
  const section: RecallLedger['entries'] =
    ledger === undefined
      ? []
      : kind === 'files'
        ? ledger.files.map(({ recreated: _recreated, ...file }) => file)
        : kind === 'commands'
          ? ledger.commands.map(({ runner: _runner, ...command }) => command)
          : ledger.facts;
  const end = offset + limit;
  return {
    kind: 'ledger',
    section: kind,
    entries: section.slice(offset, end),
    total: section.length,
    nextCursor: end < section.length ? ledgerCursor(end) : null,
    ...(kind === 'commands' ? { openErrors: ledger?.openErrors ?? [] } : {}),
    ...(kind === 'facts' ? { unlistedConstraints: stored?.unlistedConstraints ?? [] } : {}),
    throughSeq: ledger?.throughSeq ?? 0,
  };
}
