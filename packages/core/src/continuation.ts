/**
 * OpenCode's synthetic "Continue if you have next steps" (docs/PRESETS.md, `opencode`): after an
 * automatic compaction the agent loop appends that user message so the interrupted work goes on.
 * Compactor does not drive the agent, so it tells the client what to append (the
 * `session.compacted` event carries {@link continuationAfterCompaction}), and the trigger treats
 * such a message as part of the compaction, never as new history (REFERENCE: "a synthetic
 * 'Continue…' message after a finished turn re-triggers compaction").
 */
import type { CompactionReason, Message } from './model';
import type { Policy } from './policy';

/** `metadata.type` that marks the synthetic continuation message a client appends. */
export const CONTINUATION_METADATA_TYPE = 'compaction_continue';

/** The message a client should append after a compaction: a user message with this text and metadata. */
export interface ContinuationHint {
  role: 'user';
  text: string;
  metadata: { type: typeof CONTINUATION_METADATA_TYPE };
}

/**
 * What to append after a compaction: the policy's `continueMessage` (OpenCode preset: "Continue
 * if you have next steps") after an automatic one (threshold or overflow: OpenCode's `auto`);
 * `null` after a manual one, whose caller decides what comes next, or when the policy has none.
 */
export function continuationAfterCompaction(
  policy: Pick<Policy, 'continueMessage'>,
  reason: CompactionReason,
): ContinuationHint | null {
  if (policy.continueMessage === null || reason === 'manual') return null;
  return { role: 'user', text: policy.continueMessage, metadata: { type: CONTINUATION_METADATA_TYPE } };
}

/** Whether a message is the synthetic continuation (a user message marked by its metadata). */
export function isContinuationMessage(message: Pick<Message, 'role' | 'summary' | 'metadata'>): boolean {
  return (
    message.role === 'user' && !message.summary && message.metadata['type'] === CONTINUATION_METADATA_TYPE
  );
}
