import type {
  CacheModel,
  CompactionBoundary,
  Finish,
  Message,
  MessageError,
  ModelInfo,
  Part,
  ToolStatus,
  Usage,
} from '@compactor/core';
import { assertNever, resolveCacheModel } from '@compactor/core';
import type { compactions, messages, parts, sessions } from './schema';

/** A `sessions` row as selected; `policy` holds the client's policy input, not a resolved policy. */
export type SessionRow = typeof sessions.$inferSelect;
/** A `messages` row as selected; its parts are `parts` rows ({@link messagesFromRows} joins them). */
export type MessageRow = typeof messages.$inferSelect;
/** A `parts` row as stored, without its prune state (what an insert or update returns). */
export type PartColumns = typeof parts.$inferSelect;
/**
 * A `parts` row as selected: one table for every part type, unused columns `null`, with its
 * prune time from `part_prunes` (`null` unless the output was pruned).
 */
export type PartRow = PartColumns & { compactedAt: Date | null };
/** A `parts` row to insert; build one with {@link partToRow}. */
export type NewPartRow = typeof parts.$inferInsert;
/** A `compactions` row as selected: one compaction's lifecycle, outcome and cost (the analysts' history). */
export type CompactionRow = typeof compactions.$inferSelect;

/** The model a session talks to, from its row. */
export function sessionModel(session: SessionRow): ModelInfo {
  return {
    id: session.modelId,
    provider: session.provider,
    contextWindow: session.contextWindow,
    maxOutputTokens: session.maxOutputTokens,
    inputLimit: session.inputLimit,
  };
}

/** The session's cache model: the catalog's prices and cache behaviour, completed by its overrides. */
export function sessionCacheModel(session: SessionRow): CacheModel {
  return resolveCacheModel(session.modelId, { pricing: session.modelPricing, cache: session.modelCache });
}

/** A stored part row as the shared model's part. */
export function partFromRow(row: PartRow): Part {
  switch (row.type) {
    case 'text':
    case 'reasoning':
      return { type: row.type, text: row.text ?? '', tokens: row.tokens };
    case 'tool':
      return {
        type: 'tool',
        callId: row.callId ?? '',
        tool: row.tool ?? '',
        status: (row.toolStatus ?? 'pending') as ToolStatus,
        input: row.toolInput ?? {},
        output: row.toolOutput,
        error: row.toolError,
        compactedAt: row.compactedAt?.toISOString() ?? null,
        tokens: row.tokens,
        outputTokens: row.outputTokens,
      };
    case 'file':
      return {
        type: 'file',
        mime: row.mime ?? '',
        filename: row.filename,
        url: row.url ?? '',
        tokens: row.tokens,
        ...(row.text !== null ? { callId: row.text } : {}),
      };
    case 'compaction':
      return { type: 'compaction', auto: row.compactionAuto ?? false, tokens: row.tokens };
    default:
      return assertNever(row.type, 'part type');
  }
}

/** The columns a new part row needs, positioned at `idx` of its message. */
export function partToRow(
  part: Part,
  at: { messagePk: number; sessionPk: number; seq: number; idx: number },
): NewPartRow {
  const base = { ...at, type: part.type, tokens: part.tokens };
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return { ...base, text: part.text };
    case 'tool':
      return {
        ...base,
        callId: part.callId,
        tool: part.tool,
        toolStatus: part.status,
        toolInput: part.input ?? null,
        toolOutput: part.output,
        toolError: part.error,
        outputTokens: part.outputTokens,
      };
    case 'file':
      // A file part has no text: the column holds the call whose result the file belongs to.
      return { ...base, mime: part.mime, filename: part.filename, url: part.url, text: part.callId ?? null };
    case 'compaction':
      return { ...base, compactionAuto: part.auto };
    default:
      return assertNever(part, 'part');
  }
}

/** A message row's usage columns as core `Usage`; `null` when the turn reported none (`usage_input` null). */
export function usageFromRow(row: MessageRow): Usage | null {
  if (row.usageInput === null) return null;
  return {
    input: row.usageInput,
    output: row.usageOutput ?? 0,
    reasoning: row.usageReasoning ?? 0,
    cacheRead: row.usageCacheRead ?? 0,
    cacheWrite: row.usageCacheWrite ?? 0,
  };
}

/** The usage columns of a message row, all `null` for a `null` usage; inverse of {@link usageFromRow}. */
export function usageToColumns(usage: Usage | null) {
  return {
    usageInput: usage?.input ?? null,
    usageOutput: usage?.output ?? null,
    usageReasoning: usage?.reasoning ?? null,
    usageCacheRead: usage?.cacheRead ?? null,
    usageCacheWrite: usage?.cacheWrite ?? null,
  };
}

/** Joins message rows with their part rows (any order) into shared-model messages, by seq. */
export function messagesFromRows(messageRows: MessageRow[], partRows: PartRow[]): Message[] {
  const partsByMessage = new Map<number, PartRow[]>();
  for (const row of partRows) {
    const list = partsByMessage.get(row.messagePk);
    if (list) list.push(row);
    else partsByMessage.set(row.messagePk, [row]);
  }
  return [...messageRows]
    .sort((a, b) => a.seq - b.seq)
    .map((row) => ({
      id: row.id,
      seq: row.seq,
      role: row.role,
      parts: (partsByMessage.get(row.pk) ?? []).sort((a, b) => a.idx - b.idx).map(partFromRow),
      finish: row.finish as Finish | null,
      error: row.error as MessageError | null,
      usage: usageFromRow(row),
      createdAt: row.createdAt.toISOString(),
      metadata: (row.metadata ?? {}) as Record<string, unknown>,
      summary: row.summary,
      compactionId: row.compactionId,
    }));
}

/** What core's context assembly needs from a compaction row; `finishedAt` becomes an ISO string. */
export function boundaryFromRow(row: CompactionRow): CompactionBoundary {
  return {
    id: row.id,
    status: row.status,
    boundarySeq: row.boundarySeq,
    summaryMessageIds: row.summaryMessageIds,
    finishedAt: row.finishedAt?.toISOString() ?? null,
  };
}
