import {
  InvalidSummaryError,
  LlmAbortedError,
  LlmFatalError,
  LlmOverflowError,
  LlmRetryableError,
  isLlmError,
} from '@compactor/llm';
import { CoveredMessageChangedError, isDatabaseUnavailable } from '@compactor/db';

/** Error codes a failed compaction records (`compactions.error_code`). */
export type CompactionErrorCode =
  | 'llm_retries_exhausted'
  | 'llm_fatal'
  | 'llm_overflow'
  | 'invalid_summary'
  | 'context_cannot_fit'
  | 'kept_messages_cannot_fit'
  | 'session_gone'
  | 'invalid_policy'
  | 'attempts_exhausted'
  | 'covered_messages_changed'
  | 'internal_error';

/** The compaction cannot succeed by retrying: record it as failed with this code. */
export class CompactionFailedError extends Error {
  override readonly name = 'CompactionFailedError';
  constructor(
    readonly code: CompactionErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Whether another attempt could succeed (the queue retries these, with backoff). */
export function isTransient(error: unknown): boolean {
  // Covered messages kept changing through every re-plan of an attempt: the next one may find them settled.
  if (error instanceof LlmRetryableError || error instanceof CoveredMessageChangedError) return true;
  if (isLlmError(error)) return false;
  if (error instanceof CompactionFailedError) return false;
  // Database or network blips: the database is unreachable or did not answer in time.
  return isDatabaseUnavailable(error);
}

/** The code a summarizer failure is recorded with when it ends the compaction (or its fallback). */
export function llmFailureCode(error: unknown): CompactionErrorCode {
  if (error instanceof LlmRetryableError) return 'llm_retries_exhausted';
  if (error instanceof LlmOverflowError) return 'llm_overflow';
  if (error instanceof InvalidSummaryError) return 'invalid_summary';
  if (error instanceof LlmFatalError) return 'llm_fatal';
  return 'internal_error';
}

/** Whether `error` is a cancellation (job signal or aborted LLM call): rethrow it, never record a failure. */
export function isAbort(error: unknown): boolean {
  return error instanceof LlmAbortedError || (error as { name?: string })?.name === 'AbortError';
}

/**
 * The one retry decision: a cancellation always propagates (the job was stopped, nothing is
 * recorded), and a transient failure propagates for the queue to retry unless this is the
 * queue's last attempt — then it ends the compaction (or its fallback) like any other failure.
 */
export function shouldRethrow(error: unknown, attempt: { lastAttempt: boolean }): boolean {
  return isAbort(error) || (isTransient(error) && !attempt.lastAttempt);
}

/** Throws `error` when {@link shouldRethrow} says the queue, not the workflow, handles it. */
export function rethrowForRetry(error: unknown, attempt: { lastAttempt: boolean }): void {
  if (shouldRethrow(error, attempt)) throw error;
}
