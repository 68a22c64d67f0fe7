import type { CompactionStep } from '@compactor/core';
import {
  enterStep,
  finishCompactionStep,
  safeErrorMessage,
  StaleAttemptError,
  type StepPatch,
} from '@compactor/db';
import type { CompactionEventType, SessionEventMap } from './session-events';
import type { Attempt } from './attempt';
import type { WorkflowResources } from './resources';

/** Sends one of the compaction's events (not waited for: see `publish` in run-compaction.ts). */
export type Announce = <T extends CompactionEventType>(type: T, data: SessionEventMap[T]) => void;

/**
 * An attempt's step records (`compaction_steps`), the row's `step` column and the step events,
 * written with as few round trips as a step change allows: entering a step closes the previous
 * step's record, writes the row's fenced columns and opens the new record in one statement.
 * A step that throws has its record closed as failed; finalize closes its own record inside
 * its transaction (`openRecord`).
 */
export class StepTrail {
  private open: {
    pk: number;
    name: CompactionStep;
    detail: Record<string, unknown>;
    startedAt: number;
  } | null = null;

  constructor(
    private readonly resources: WorkflowResources,
    private readonly attempt: Attempt,
    private readonly announce: Announce,
  ) {}

  /**
   * Enters `name` (fenced: StaleAttemptError when a newer attempt owns the row), writing `patch`
   * with it. `passed`: a step that ended without a statement of its own (its `result` is the
   * record's detail, `startedAt` when it began), recorded in the same statement and announced
   * before `name`.
   */
  async enter(
    name: CompactionStep,
    patch?: StepPatch,
    passed?: { name: CompactionStep; result: unknown; startedAt: Date },
  ): Promise<void> {
    const { compaction, fence } = this.attempt;
    const pk = await enterStep(this.resources.db, {
      compactionId: compaction.id,
      fence,
      attempt: compaction.attempts,
      step: name,
      at: this.resources.clock(),
      ...(patch ? { patch } : {}),
      ...(this.open ? { finish: { pk: this.open.pk, detail: this.open.detail } } : {}),
      ...(passed
        ? { passed: { step: passed.name, detail: stepDetail(passed.result), startedAt: passed.startedAt } }
        : {}),
    });
    if (pk === null) throw new StaleAttemptError(compaction.id, fence, null);
    if (passed) {
      const tookMs = this.resources.clock().getTime() - passed.startedAt.getTime();
      this.resources.observer?.stepEnded?.(passed.name, 'completed', Math.max(0, tookMs));
      this.announce('compaction.step', { step: passed.name, attempt: compaction.attempts });
    }
    this.open = { pk, name, detail: {}, startedAt: performance.now() };
    this.announce('compaction.step', { step: name, attempt: compaction.attempts });
  }

  /**
   * Runs the open step's work: its result becomes the record's detail, an error closes it as
   * failed. `recordsItself`: the step closes its own record (finalize, inside its transaction), so
   * its result, a whole compaction row, is not copied into a detail nothing writes.
   */
  async run<T>(work: () => Promise<T>, { recordsItself = false } = {}): Promise<T> {
    const open = this.open;
    if (!open) throw new Error('no step entered');
    try {
      const result = await work();
      if (!recordsItself) open.detail = stepDetail(result);
      this.ended(open, 'completed');
      return result;
    } catch (error) {
      this.ended(open, 'failed');
      // Closed here: a step entered next (a re-plan) must not close it again as completed.
      this.open = null;
      await finishCompactionStep(this.resources.db, open.pk, {
        status: 'failed',
        errorMessage: safeErrorMessage(error),
        at: this.resources.clock(),
      });
      throw error;
    }
  }

  private ended(step: { name: CompactionStep; startedAt: number }, outcome: 'completed' | 'failed'): void {
    this.resources.observer?.stepEnded?.(step.name, outcome, performance.now() - step.startedAt);
  }

  /** Closes the open record as completed, for an attempt that ends without entering another step. */
  async close(): Promise<void> {
    if (!this.open) return;
    await finishCompactionStep(this.resources.db, this.open.pk, {
      status: 'completed',
      detail: this.open.detail,
      at: this.resources.clock(),
    });
  }

  /** The open record, for a step that closes it inside its own transaction (finalize). */
  get openRecord(): { pk: number; at: Date } {
    if (!this.open) throw new Error('no step entered');
    return { pk: this.open.pk, at: this.resources.clock() };
  }
}

/**
 * What a step's record keeps of its result: plain numbers and labels, never message text
 * (summaries, instructions, file paths and the ledger's entries stay out of step records). Finalize's record is
 * written by `completeCompaction`: the new view's size.
 */
export function stepDetail(result: unknown): Record<string, unknown> {
  if (result === null || typeof result !== 'object') return {};
  const {
    summaryText: _text,
    fileOps: _ops,
    ledger: _ledger,
    ledgerBlock: _block,
    unlistedConstraints: _constraints,
    ...rest
  } = result as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}
