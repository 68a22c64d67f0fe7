/** `POST /v1/compactions/:id/revert`: undoing a session's latest completed compaction. */
import { z } from 'zod';
import { CompactionOut, compactionExample } from './compactions.js';
import { StatusOut, statusExample } from './sessions.js';

/** Why a revert was refused (`details.reason` of its 409 `conflict`). */
export const REVERT_CONFLICT_REASONS = [
  'compaction_active',
  'not_completed',
  'not_latest',
  'history_purged',
] as const;
/** One of {@link REVERT_CONFLICT_REASONS}. */
export type RevertConflictReason = (typeof REVERT_CONFLICT_REASONS)[number];

const revertedExample = {
  ...compactionExample,
  status: 'reverted' as const,
  revertedAt: '2026-01-05T10:05:00.000Z',
};

/** The compaction as the revert left it, and the session's status with the view restored. */
export const RevertCompactionOut = z
  .object({
    compaction: CompactionOut.describe('The compaction, now `reverted`'),
    status: StatusOut.describe(
      'The session right after the revert: the context view the compaction before it defines',
    ),
  })
  .meta({
    id: 'RevertedCompaction',
    examples: [
      {
        compaction: revertedExample,
        status: {
          ...statusExample,
          tokens: 96_512,
          percent: 100.5,
          overflow: true,
          contextMessages: 118,
          messagesSinceCompaction: 118,
          lastCompaction: revertedExample,
        },
      },
    ],
  });
/** A revert's answer as a client receives it. */
export type RevertCompactionResponse = z.output<typeof RevertCompactionOut>;
