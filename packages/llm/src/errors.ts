import type { LlmUsage } from './usage';
import { addCost, addUsage, ZERO_USAGE } from './usage';

/**
 * The errors callers act on. Each class is a decision, not a description: the job queue retries
 * `LlmRetryableError` (after `retryAfterMs` when the provider said so), runs an emergency
 * compaction or shrinks the request on `LlmOverflowError`, fails fast on `LlmFatalError`, falls
 * back to truncation on `InvalidSummaryError`, and stops quietly on `LlmAbortedError`.
 */

export type LlmErrorKind = 'retryable' | 'overflow' | 'fatal' | 'invalid-output' | 'aborted';

/** Why a retryable error is retryable; useful in metrics and compaction step records. */
export type RetryableReason = 'rate-limit' | 'server' | 'timeout' | 'connection' | 'malformed-response';

/**
 * What the answered (and so billed) requests of one summarize operation cost before it failed:
 * earlier chunks, invalid attempts, the other half of a split turn. Summed like a result's usage.
 */
export interface LlmSpend {
  usage: LlmUsage;
  /** `null` when a price is unknown, as in results. */
  costUsd: number | null;
  /** Answered requests it covers. */
  calls: number;
}

/** Nothing spent: the start of a sum with {@link addSpend}. Frozen. */
export const NO_SPEND: LlmSpend = Object.freeze({ usage: ZERO_USAGE, costUsd: 0, calls: 0 });

/** Field-by-field sum of two spends (`null` cost is contagious, as in {@link addCost}). */
export function addSpend(a: LlmSpend, b: LlmSpend): LlmSpend {
  return {
    usage: addUsage(a.usage, b.usage),
    costUsd: addCost(a.costUsd, b.costUsd),
    calls: a.calls + b.calls,
  };
}

/** Context of an {@link LlmError}: the provider's HTTP status and the underlying error. */
export interface LlmErrorDetails {
  /** HTTP status of the provider's answer, when there was one. */
  status?: number | null;
  cause?: unknown;
  /** See {@link LlmError.spent}. */
  spent?: LlmSpend | null;
}

/** Base of the classified LLM errors: `kind` (or the subclass) says what the caller should do. */
export abstract class LlmError extends Error {
  abstract readonly kind: LlmErrorKind;
  readonly status: number | null;
  /**
   * What this summarize operation had already paid for when it failed, if it had paid anything:
   * set on errors thrown out of `summarize`, `summarizeMessages` and `summarizeSplitTurn` after
   * answered requests (earlier chunks, invalid attempts, the other half of a split turn, including
   * one cancelled because this error happened). `undefined` when no request had been answered
   * (and for `complete` and `detectTopicBoundary`, which make one request). A compaction that
   * fails or falls back records it, as it records a result's `usage`. `InvalidSummaryError` sets
   * it too, equal to its `usage` and `costUsd`.
   */
  readonly spent?: LlmSpend;

  constructor(message: string, details: LlmErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.status = details.status ?? null;
    if (details.spent && !isNothingSpent(details.spent)) this.spent = details.spent;
  }
}

function isNothingSpent(spent: LlmSpend): boolean {
  return (
    spent.calls === 0 &&
    spent.usage.promptTokens === 0 &&
    spent.usage.completionTokens === 0 &&
    spent.costUsd === 0
  );
}

/** 429, 5xx, 408/409, timeouts, connection resets, garbled responses: worth trying again. */
export class LlmRetryableError extends LlmError {
  readonly kind = 'retryable' as const;
  readonly reason: RetryableReason;
  /** How long the provider asked us to wait (`retry-after-ms` / `retry-after`), if it did. */
  readonly retryAfterMs: number | null;

  constructor(
    message: string,
    reason: RetryableReason,
    details: LlmErrorDetails & { retryAfterMs?: number | null } = {},
  ) {
    super(message, details);
    this.reason = reason;
    this.retryAfterMs = details.retryAfterMs ?? null;
  }
}

/** The request did not fit the model's context window: retrying the same request cannot help. */
export class LlmOverflowError extends LlmError {
  readonly kind = 'overflow' as const;
  /** The pattern of core's overflow classifier that recognised the error. */
  readonly matched: string | null;

  constructor(message: string, matched: string | null, details: LlmErrorDetails = {}) {
    super(message, details);
    this.matched = matched;
  }
}

/** Authentication, permission, unknown model, bad request: a person has to fix something. */
export class LlmFatalError extends LlmError {
  readonly kind = 'fatal' as const;
}

/** The caller's AbortSignal fired (worker shutdown, compaction cancelled). Not a failure of the provider. */
export class LlmAbortedError extends LlmError {
  readonly kind = 'aborted' as const;
}

/**
 * The model answered, but not with a usable summary (empty, echoing the instructions,
 * continuing the conversation, calling a tool, or cut off at the output limit) on every
 * attempt. The workflow falls back to the truncate strategy, starting from `partialSummary`
 * when a chunked summary failed after earlier chunks succeeded.
 */
export class InvalidSummaryError extends LlmError {
  readonly kind = 'invalid-output' as const;
  /**
   * Core's rejection reason of the last attempt (`empty`, `echoes-instructions`,
   * `continues-conversation`, `calls-tool`), or `cut-off` (`finish_reason: length`).
   */
  readonly reason: string;
  readonly attempts: number;
  /** What the failed attempts cost: the compaction row records it even when it falls back. */
  readonly usage: LlmUsage;
  readonly costUsd: number | null;
  /**
   * The running summary of the chunks that succeeded before the failing one (the previous
   * summary merged in), or `null` when the first chunk failed. It covers
   * `messages.slice(0, partialSummaryCovers)` of the input: hand it to core's
   * `buildTruncateSummary(messages.slice(partialSummaryCovers), { previousSummary })` rather than
   * throwing away what was paid for.
   */
  readonly partialSummary: string | null;
  /** How many of the input messages `partialSummary` covers (0 when it is `null`). */
  readonly partialSummaryCovers: number;

  constructor(
    reason: string,
    attempts: number,
    spent: {
      usage: LlmUsage;
      costUsd: number | null;
      /** Answered requests `usage` covers (for {@link LlmError.spent}). Default `attempts`. */
      calls?: number;
      partialSummary?: string | null;
      partialSummaryCovers?: number;
    },
  ) {
    super(`summarizer output was invalid after ${attempts} attempt(s): ${reason}`, {
      spent: { usage: spent.usage, costUsd: spent.costUsd, calls: spent.calls ?? attempts },
    });
    this.reason = reason;
    this.attempts = attempts;
    this.usage = spent.usage;
    this.costUsd = spent.costUsd;
    this.partialSummary = spent.partialSummary ?? null;
    this.partialSummaryCovers = this.partialSummary === null ? 0 : (spent.partialSummaryCovers ?? 0);
  }
}

/**
 * `error` carrying `spent` (the total, replacing what it carried) for the caller to record. The
 * same instance (class, stack and cause kept), except an `InvalidSummaryError`, which is rebuilt
 * with `usage` and `costUsd` set to the total too. Nothing spent: `error` unchanged.
 */
export function withSpent<E extends LlmError>(error: E, spent: LlmSpend): E {
  if (isNothingSpent(spent)) return error;
  if (error instanceof InvalidSummaryError) {
    return new InvalidSummaryError(error.reason, error.attempts, {
      usage: spent.usage,
      costUsd: spent.costUsd,
      calls: spent.calls,
      partialSummary: error.partialSummary,
      partialSummaryCovers: error.partialSummaryCovers,
    }) as LlmError as E;
  }
  Object.defineProperty(error, 'spent', {
    value: spent,
    enumerable: true,
    configurable: true,
    writable: false,
  });
  return error;
}

/** What `error` says was spent ({@link LlmError.spent}); nothing for other errors. */
export function spentOf(error: unknown): LlmSpend {
  return error instanceof LlmError && error.spent ? error.spent : NO_SPEND;
}

/** Whether `error` is a classified LLM error ({@link LlmError}), whose `kind` says how to handle it. */
export function isLlmError(error: unknown): error is LlmError {
  return error instanceof LlmError;
}
