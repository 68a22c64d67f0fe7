/**
 * What the replay records once a compaction has ended: its row's figures, the context served
 * right after it (valid for a provider? within the window?) and the retention probes.
 */
import {
  validateContext,
  validateNativeContext,
  type ContextIssue,
  type FileToolNames,
  type Message,
  type OpenAIChatMessage,
} from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import type { ApiCall, Json } from '@compactor/stack';
import { probeRetention, type ContextMessage, type TranscriptFacts } from '../probes/retention';
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

function outcomeOf(row: Json): Outcome {
  switch (row.status) {
    case 'completed': {
      const finalize = (row.steps as Json[] | undefined)?.findLast((s) => s.step === 'finalize');
      const writtenBy = finalize?.detail?.writtenBy as string | undefined;
      return row.strategy === 'truncate' || writtenBy === 'truncate' ? 'truncated' : 'summarized';
    }
    case 'failed':
    case 'skipped':
      return row.status;
    default:
      return 'unfinished';
  }
}

const path = (id: string) => encodeURIComponent(id);

/** The next prompt's estimate after a compaction, and its kind (`exact` right after one). */
export interface Served {
  tokens: number;
  estimate: 'hybrid' | 'exact';
}

/** The three reads that show what a compaction left: the context in both formats, and the status. */
function readContext(call: ApiCall, sessionId: string): Promise<[Json, Json, Json]> {
  return Promise.all([
    call('GET', `/v1/sessions/${path(sessionId)}/context`),
    call('GET', `/v1/sessions/${path(sessionId)}/context?format=openai`),
    call('GET', `/v1/sessions/${path(sessionId)}`),
  ]);
}

function checkContext([native, openai, session]: [Json, Json, Json]): {
  check: ContextCheck;
  native: ContextMessage[];
  served: Served;
} {
  const issues: ContextIssue[] = [
    ...validateContext(openai.messages as OpenAIChatMessage[]),
    ...validateNativeContext(native.messages as Message[]),
  ];
  const usable = session.status.usable as number;
  return {
    check: {
      messages: (native.messages as unknown[]).length,
      tokens: native.tokens as number,
      usable,
      withinWindow: (native.tokens as number) <= usable,
      cannotFit: session.status.cannotFit === true,
      issues,
      valid: issues.length === 0,
    },
    native: native.messages as ContextMessage[],
    served: {
      tokens: session.status.tokens as number,
      estimate: session.status.estimate as Served['estimate'],
    },
  };
}

/** Reads the ended compaction and the context after it; `served`: the next prompt's estimate (completed ones). */
export async function recordCompaction(
  call: ApiCall,
  state: SessionState,
  ended: EndedCompaction,
): Promise<{ record: CompactionRecord; served: Served | null; activeAfter: string | null }> {
  // The row and the context are read side by side: nothing is appended until the check is done,
  // so the context is the one this compaction left (it is only used when the row says completed).
  const [row, reads] = await Promise.all([
    call('GET', `/v1/compactions/${path(ended.id)}`),
    readContext(call, state.sessionId),
  ]);
  const outcome = outcomeOf(row);
  let context: ContextCheck | null = null;
  let retention = null;
  let served: Served | null = null;
  if (row.status === 'completed') {
    const checked = checkContext(reads);
    context = checked.check;
    served = checked.served;
    const boundary = row.boundarySeq as number | null;
    const appendedCount = state.seqs.length;
    const compactedCount = boundary === null ? 0 : state.seqs.filter((seq) => seq < boundary).length;
    retention = probeRetention({
      messages: state.transcript,
      compactedCount,
      appendedCount,
      context: checked.native,
      ...(state.fileTools ? { fileTools: state.fileTools } : {}),
      ...(state.facts ? { facts: state.facts } : {}),
    });
  }
  const requested = Date.parse(row.requestedAt as string);
  const finished = row.finishedAt ? Date.parse(row.finishedAt as string) : NaN;
  const active = (reads[2].status?.activeCompaction as Json | null) ?? null;
  return {
    served,
    // Read with the context: a follow-up the worker started once this one ended (see replay-run).
    activeAfter: active && active.id !== row.id ? (active.id as string) : null,
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
      latencyMs: Number.isNaN(finished) ? null : finished - requested,
      waitedMs: ended.waitedMs,
      error: row.error ?? null,
      context,
      followedBy: null,
      retention,
    },
  };
}
