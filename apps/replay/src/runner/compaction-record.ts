/**
 * What the replay records once a compaction has ended: its row's figures, the context served
 * right after it (valid for a provider? within the window?) and the retention probes.
 */
import {
  CompactorApiError,
  type CompactionWithSteps,
  type CompactorClient,
  type NativeContext,
  type OpenAIContext,
  type Session,
  type SessionStatus,
} from '@compactor/client';
import {
  toolInputStrings,
  validateContext,
  validateNativeContext,
  type ContextIssue,
  type FileToolNames,
} from '@compactor/core';
import { MAX_RECALL_LEDGER_LIMIT, type RecallLedgerKind } from '@compactor/contract';
import type { MessageInput } from '@compactor/db';
import { probeRecall, type RecallProbe } from '../probes/recall';
import { probeTasks, type TasksProbe } from '../probes/tasks';
import {
  probeRetention,
  servedTexts,
  type ContextMessage,
  type RetentionProbes,
  type TranscriptFacts,
} from '../probes/retention';
import type { CompactionRecord, ContextCheck, Outcome } from '../report/model';

export interface EndedCompaction {
  id: string;
  triggeredAtTurn: number;
  endedAtTurn: number;
  waitedMs: number;
}

export interface SessionState {
  sessionId: string;
  transcript: readonly MessageInput[];
  /** Seq the API gave each appended message, in transcript order. */
  seqs: readonly number[];
  fileTools: FileToolNames | undefined;
  /** What the probes read of the transcript, kept across this session's compactions. */
  facts?: TranscriptFacts;
}

function outcomeOf(row: CompactionWithSteps): Outcome {
  switch (row.status) {
    case 'completed': {
      const finalize = row.steps.findLast((s) => s.step === 'finalize');
      const writtenBy = finalize?.detail.writtenBy;
      return row.strategy === 'truncate' || writtenBy === 'truncate' ? 'truncated' : 'summarized';
    }
    case 'failed':
    case 'skipped':
      return row.status;
    default:
      return 'unfinished';
  }
}

/** The next prompt's estimate after a compaction, and its kind (`stored` right after one). */
export interface Served {
  tokens: number;
  estimate: SessionStatus['estimate'];
}

type ContextReads = [NativeContext, OpenAIContext, Session];

/** The three reads that show what a compaction left: the context in both formats, and the status. */
function readContext(client: CompactorClient, sessionId: string): Promise<ContextReads> {
  return Promise.all([
    client.getContext(sessionId),
    client.getContext(sessionId, { format: 'openai' }),
    client.getSession(sessionId),
  ]);
}

function checkContext([native, openai, session]: ContextReads): {
  check: ContextCheck;
  native: ContextMessage[];
  /** Each message's text as the model reads it (the OpenAI rendering). */
  texts: string[];
  served: Served;
} {
  const issues: ContextIssue[] = [
    ...validateContext(openai.messages),
    ...validateNativeContext(native.messages),
  ];
  // The replay's sessions have a finite window: the API computes what of it is usable.
  const usable = session.status.usable!;
  return {
    check: {
      messages: native.messages.length,
      tokens: native.tokens,
      usable,
      withinWindow: native.tokens <= usable,
      cannotFit: session.status.cannotFit === true,
      issues,
      valid: issues.length === 0,
    },
    native: native.messages,
    texts: servedTexts(openai.messages),
    served: { tokens: session.status.tokens, estimate: session.status.estimate },
  };
}

/** Reads the ended compaction and the context after it; `served`: the next prompt's estimate (completed ones). */
export async function recordCompaction(
  client: CompactorClient,
  state: SessionState,
  ended: EndedCompaction,
): Promise<{ record: CompactionRecord; served: Served | null; activeAfter: string | null }> {
  // The row and the context are read side by side: nothing is appended until the check is done,
  // so the context is the one this compaction left (it is only used when the row says completed).
  const [row, reads] = await Promise.all([
    client.getCompaction(ended.id),
    readContext(client, state.sessionId),
  ]);
  const outcome = outcomeOf(row);
  let context: ContextCheck | null = null;
  let retention = null;
  let recall: RecallProbe | null = null;
  let tasks: TasksProbe | null = null;
  let served: Served | null = null;
  if (row.status === 'completed') {
    const checked = checkContext(reads);
    context = checked.check;
    served = checked.served;
    const boundary = row.boundarySeq;
    const appendedCount = state.seqs.length;
    const compactedCount = boundary === null ? 0 : state.seqs.filter((seq) => seq < boundary).length;
    retention = probeRetention({
      messages: state.transcript,
      compactedCount,
      appendedCount,
      context: checked.native,
      served: checked.texts,
      ...(state.fileTools ? { fileTools: state.fileTools } : {}),
      ...(state.facts ? { facts: state.facts } : {}),
    });
    recall = await recallWhatWasLost(client, state.sessionId, retention);
    tasks = probeTasks({ messages: state.transcript, compactedCount, context: checked.native });
  }
  const requested = Date.parse(row.requestedAt);
  const finished = row.finishedAt ? Date.parse(row.finishedAt) : NaN;
  const active = reads[2].status.activeCompaction ?? null;
  return {
    served,
    // Read with the context: the follow-up committed with this one's completion (see replay-run).
    activeAfter: active && active.id !== row.id ? active.id : null,
    record: {
      id: row.id,
      reason: row.reason,
      strategy: row.strategy,
      outcome,
      triggeredAtTurn: ended.triggeredAtTurn,
      endedAtTurn: ended.endedAtTurn,
      tokensBefore: row.tokensBefore ?? null,
      tokensAfter: row.tokensAfter ?? null,
      prunedParts: row.prunedParts ?? 0,
      prunedTokens: row.prunedTokens ?? 0,
      llm:
        row.model && row.usage
          ? {
              model: row.model,
              input: row.usage.input,
              output: row.usage.output,
              costUsd: row.costUsd ?? null,
            }
          : null,
      cache: row.cache ?? null,
      latencyMs: Number.isNaN(finished) ? null : finished - requested,
      waitedMs: ended.waitedMs,
      error: row.error ?? null,
      context,
      followedBy: null,
      retention,
      recall,
      tasks,
    },
  };
}

/** The recall probe, or null against an API without the recall route (its 404 names no session). */
async function recallWhatWasLost(
  client: CompactorClient,
  sessionId: string,
  retention: RetentionProbes,
): Promise<RecallProbe | null> {
  try {
    return await probeRecall(
      {
        search: (q) => client.recall(sessionId, { q }),
        listing: (kind) => ledgerListing(client, sessionId, kind),
      },
      retention,
    );
  } catch (error) {
    if (error instanceof CompactorApiError && error.status === 404) return null;
    throw error;
  }
}

/** Most pages of a listing read: past them the rest is left unlisted (25,000 entries). */
const MAX_LISTING_PAGES = 50;

/**
 * A ledger section's strings, every page (paths, commands, facts, and the constraints the pinned
 * section had no room for), as the agent's `recall?kind=` call gets them; `null` when the API
 * refuses `kind` (one without the ledger).
 */
async function ledgerListing(
  client: CompactorClient,
  sessionId: string,
  kind: RecallLedgerKind,
): Promise<string | null> {
  const strings: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_LISTING_PAGES; page++) {
    let answer;
    try {
      answer = await client.recall(sessionId, {
        kind,
        limit: MAX_RECALL_LEDGER_LIMIT,
        ...(cursor === null ? {} : { cursor }),
      });
    } catch (error) {
      if (error instanceof CompactorApiError && error.status === 400) return null;
      throw error;
    }
    strings.push(...toolInputStrings(answer.entries), ...(answer.unlistedConstraints ?? []));
    cursor = answer.nextCursor;
    if (cursor === null) break;
  }
  return strings.join('\n');
}
