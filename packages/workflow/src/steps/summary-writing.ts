import { z } from 'zod';
import {
  checkTruncateSummary,
  collectSummaryFacts,
  extractFileOps,
  extractPreviousFileOps,
  mergeFileOps,
  summaryBudgetTokens,
  verifySummary,
  ArtifactLedgerSchema,
  type ArtifactLedger,
  type FileOps,
  type Message,
} from '@compactor/core';
import {
  InvalidSummaryError,
  resolveSummarizerSettings,
  type LlmUsage,
  type SummarizerSettings,
  type SummaryResult,
} from '@compactor/llm';
import type { StoredClamp } from '@compactor/db';
import type { Attempt } from '../attempt';
import type { CompactedRange } from '../compacted-range';
import { safeErrorMessage } from '@compactor/db';
import { CompactionFailedError, llmFailureCode, rethrowForRetry } from '../errors';
import type { WorkflowResources } from '../resources';

/** What the summarizer calls cost, for the compaction row: `input`/`output` are prompt/completion tokens. */
export interface SummarySpend {
  model: string;
  usage: { input: number; output: number };
  costUsd: number | null;
}

/** What the summarize step decided: nothing to do, or the summary and the boundary to write. */
export type SummarizeOutcome =
  | { kind: 'nothing-to-compact'; reason: string }
  | {
      kind: 'summary';
      /** `null`: drop the covered messages without a summary (topic truncate-only). */
      summaryText: string | null;
      /** First kept seq. */
      boundarySeq: number;
      messagesCompacted: number;
      fileOps: FileOps;
      /**
       * The artifact ledger of the messages this compaction compacted (not the previous
       * summary's): finalize merges it into the ledger in force. Absent: it compacted none.
       */
      ledger?: ArtifactLedger;
      /**
       * The ledger in force after this compaction, rendered within its share of the summary
       * budget (steps/fit.ts): shown in the summary message in place of the file lists.
       */
      ledgerBlock?: string;
      /** The user's constraints the summary's pinned section had no room for (core `verifySummary`). */
      unlistedConstraints?: string[];
      /** How the summary was written: by the LLM, the truncate strategy or fallback, or carried over. */
      writtenBy: 'llm' | 'truncate' | 'detector' | 'previous-summary' | 'none';
      llm: SummarySpend | null;
      /** Set when the LLM failed for good and the policy fell back to truncation. */
      fallback: { code: string; message: string } | null;
      /** Kept parts the view shows clamped so the context fits (core fit.ts; steps/fit.ts). */
      clamps: StoredClamp[];
      /** For the step record: how the cut was made. */
      detail: Record<string, unknown>;
    };

/** The `summary` branch of {@link SummarizeOutcome}: a summary (or none) and the boundary to write. */
export type SummaryOutcome = Extract<SummarizeOutcome, { kind: 'summary' }>;

/** The attempt's summarizer settings; throws `LlmFatalError` when its window cannot fit any summary. */
export function summarizerSettings(resources: WorkflowResources, attempt: Attempt): SummarizerSettings {
  // The summary must fit the session's window too, whatever window the summarizer has (budgets.ts).
  const maxOutputTokens = summaryBudgetTokens(attempt.model, attempt.policy);
  return resolveSummarizerSettings({
    policy: { ...attempt.policy.summarizer, maxOutputTokens },
    session: attempt.model,
    defaultModel: resources.summarizerModel ?? null,
  });
}

/** Cumulative file ops of a compacted range: the previous summary's lists merged with the new messages'. */
export function fileOpsOf(compacted: Message[], fileTools: Attempt['policy']['fileTools']): FileOps {
  return mergeFileOps(
    extractPreviousFileOps(compacted),
    extractFileOps(
      compacted.filter((m) => !m.summary),
      fileTools,
    ),
  );
}

/**
 * Runs the summarizer. A failure that retrying cannot fix (or any failure on the queue's last
 * attempt) falls back to the truncate text when the policy allows it — starting from the part
 * of the summary already written, if chunked summarization got that far; a transient failure on
 * an earlier attempt is rethrown for the queue to retry.
 *
 * Either text is checked (core summary-check.ts): the goal, the users' constraints, the request's
 * instructions and the latest request (when `kept` holds no user request, or `kept` is not given)
 * are pinned where the text lacks them, and `detail.summaryCheck` records the counts by kind
 * (core `SummaryRepair`: numbers only, as step records and compaction details must be).
 */
export async function writeSummary(
  resources: WorkflowResources,
  attempt: Attempt,
  compacted: CompactedRange,
  fileOps: FileOps,
  kept: readonly Message[] | undefined,
  summarize: () => Promise<SummaryResult>,
): Promise<
  Pick<SummaryOutcome, 'summaryText' | 'writtenBy' | 'llm' | 'fallback' | 'detail' | 'unlistedConstraints'>
> {
  // The facts of the whole range, so the fallback pins what a checked summary would.
  const facts = factsToKeep(attempt, compacted.factsView, kept);
  const budgetTokens = summaryBudgetTokens(attempt.model, attempt.policy);
  let result: SummaryResult;
  try {
    result = await summarize();
  } catch (error) {
    rethrowForRetry(error, attempt);
    const code = llmFailureCode(error);
    const message = safeErrorMessage(error);
    if (attempt.policy.fallback !== 'truncate')
      throw new CompactionFailedError(code, message, { cause: error });
    resources.log.warn(
      { compactionId: attempt.compaction.id, code, err: message },
      'summarizer failed; falling back to truncation',
    );
    const partial = error instanceof InvalidSummaryError ? error.partialSummary : null;
    // The partial summary covers the first `partialSummaryCovers` messages; truncate the rest.
    const from = partial ? (error as InvalidSummaryError).partialSummaryCovers : 0;
    const checked = checkTruncateSummary(partial ? [] : compacted.leading, {
      fileOps,
      fileTools: attempt.policy.fileTools,
      ...(partial ? { previousSummary: partial } : {}),
      facts,
      budgetTokens,
      counts: await compacted.countsFrom(from),
    });
    // Calls already paid for are recorded even though their summary was not used.
    const spent = spentBeforeFailure(error);
    const llm = spent && { model: summarizerSettings(resources, attempt).model, ...spent };
    return {
      summaryText: checked.text,
      writtenBy: 'truncate',
      llm,
      fallback: { code, message },
      detail: { summaryCheck: checked.repair },
      unlistedConstraints: checked.unlistedConstraints,
    };
  }
  const checked = verifySummary(result.text, facts, { budgetTokens, fileOps });
  return {
    summaryText: checked.text,
    writtenBy: 'llm',
    llm: {
      model: result.model,
      usage: { input: result.usage.promptTokens, output: result.usage.completionTokens },
      costUsd: result.costUsd,
    },
    fallback: null,
    detail: { calls: result.calls, chunks: result.chunks, summaryCheck: checked.repair },
    unlistedConstraints: checked.unlistedConstraints,
  };
}

/** What a summary of `covered` must carry verbatim (core summary-check.ts). */
function factsToKeep(attempt: Attempt, covered: readonly Message[], kept: readonly Message[] | undefined) {
  return collectSummaryFacts(covered, {
    instructions: attempt.compaction.instructions,
    ...(kept ? { kept } : {}),
  });
}

/**
 * The truncate strategy's summary (Opal's `:truncate`: no LLM), checked like any other: the
 * pinned section and `detail.summaryCheck`.
 */
export async function truncateSummary(
  attempt: Attempt,
  compacted: CompactedRange,
  kept: readonly Message[],
  fileOps: FileOps,
): Promise<Pick<SummaryOutcome, 'summaryText' | 'detail' | 'unlistedConstraints'>> {
  const checked = checkTruncateSummary(compacted.leading, {
    fileOps,
    fileTools: attempt.policy.fileTools,
    facts: factsToKeep(attempt, compacted.factsView, kept),
    budgetTokens: summaryBudgetTokens(attempt.model, attempt.policy),
    counts: await compacted.countsFrom(0),
  });
  return {
    summaryText: checked.text,
    detail: { summaryCheck: checked.repair },
    unlistedConstraints: checked.unlistedConstraints,
  };
}

/**
 * A summary written without the summarizer (topic mode's detector summary, or the previous one
 * carried over), checked like the summarizer's: the pinned section and `detail.summaryCheck`.
 */
export function checkWrittenSummary(
  attempt: Attempt,
  covered: readonly Message[],
  kept: readonly Message[],
  summaryText: string,
  fileOps: FileOps,
): Pick<SummaryOutcome, 'summaryText' | 'detail' | 'unlistedConstraints'> {
  const checked = verifySummary(summaryText, factsToKeep(attempt, covered, kept), {
    budgetTokens: summaryBudgetTokens(attempt.model, attempt.policy),
    fileOps,
  });
  return {
    summaryText: checked.text,
    detail: { summaryCheck: checked.repair },
    unlistedConstraints: checked.unlistedConstraints,
  };
}

/**
 * What a failed summarizer run had already cost: `InvalidSummaryError` carries it, other LLM
 * errors may carry `spent` (chunked and dual summaries that failed after paid calls).
 */
export function spentBeforeFailure(error: unknown): Pick<SummarySpend, 'usage' | 'costUsd'> | null {
  const e = error as {
    usage?: LlmUsage;
    costUsd?: number | null;
    spent?: { usage: LlmUsage; costUsd: number | null };
  };
  const spent =
    e?.spent ??
    (error instanceof InvalidSummaryError ? { usage: e.usage!, costUsd: e.costUsd ?? null } : null);
  if (!spent || spent.usage.promptTokens + spent.usage.completionTokens === 0) return null;
  return {
    usage: { input: spent.usage.promptTokens, output: spent.usage.completionTokens },
    costUsd: spent.costUsd,
  };
}

const SummaryDraftSchema = z.object({
  version: z.literal(2),
  outcome: z.object({
    kind: z.literal('summary'),
    summaryText: z.string().nullable(),
    boundarySeq: z.number().int(),
    messagesCompacted: z.number().int(),
    fileOps: z.object({
      readFiles: z.array(z.string()),
      modifiedFiles: z.array(z.string()),
      readFilesOmitted: z.number().int().optional(),
      modifiedFilesOmitted: z.number().int().optional(),
    }),
    ledger: ArtifactLedgerSchema.optional(),
    unlistedConstraints: z.array(z.string()).optional(),
    writtenBy: z.enum(['llm', 'truncate', 'detector', 'previous-summary', 'none']),
    llm: z
      .object({
        model: z.string(),
        usage: z.object({ input: z.number(), output: z.number() }),
        costUsd: z.number().nullable(),
      })
      .nullable(),
    fallback: z.object({ code: z.string(), message: z.string() }).nullable(),
    clamps: z.array(
      z.object({
        seq: z.number().int(),
        idx: z.number().int(),
        field: z.enum(['output', 'error', 'text', 'input']),
        tokens: z.number().int(),
        outputTokens: z.number().int(),
        text: z.string().nullable(),
        toolInput: z.unknown(),
        toolOutput: z.string().nullable(),
        toolError: z.string().nullable(),
      }),
    ),
    detail: z.record(z.string(), z.unknown()),
  }),
});

/** The row's `summary_draft`: the summarize step's outcome, saved before finalize (pay the LLM once). */
export function toSummaryDraft(outcome: SummaryOutcome): z.infer<typeof SummaryDraftSchema> {
  return { version: 2, outcome };
}

/** A saved draft, or `null` when there is none (or it is of an unknown shape: summarize again). */
export function parseSummaryDraft(value: unknown): SummaryOutcome | null {
  if (value === null || value === undefined) return null;
  const parsed = SummaryDraftSchema.safeParse(value);
  return parsed.success ? (parsed.data.outcome as SummaryOutcome) : null;
}
