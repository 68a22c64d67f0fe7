/** What the two message writes answer: the write, the session's status, and what it triggered. */
import { z } from 'zod';
import { CacheEffectOut } from './cache-effect.js';
import { CompactionOut, PruneOut } from './compactions.js';
import { MessageOut, messageExample } from './messages.js';
import { StatusOut, statusExample } from './sessions.js';

/** The compaction a write started (or found running), in brief. */
export const TriggeredCompaction = CompactionOut.pick({ id: true, status: true, reason: true });
/** A triggered compaction as a client receives it. */
export type TriggeredCompactionRef = z.output<typeof TriggeredCompaction>;

/**
 * A finished turn's prune that waited (policy `pruning.cacheAware`): the provider's prompt cache
 * is warm and the prune would not repay the cache it breaks within `cacheHorizonTurns`.
 */
export const SkippedTurnPrune = z
  .object({
    jobId: z.null(),
    skipped: z.enum(['cache_warm']),
    cache: CacheEffectOut.describe('The estimated cache effect the decision weighed'),
  })
  .meta({ id: 'SkippedTurnPrune' });

/**
 * The prune job a write that finished an assistant turn queued (policy `prune`), or why it
 * waited. None when the view's unpruned tool outputs are too small for the policy's budgets to
 * prune anything.
 */
const TurnPrune = z
  .union([PruneOut, SkippedTurnPrune])
  .nullable()
  .describe(
    'The prune job this write queued (`jobId`), or the prune that waited for the prompt cache (`jobId: null`, `skipped`, `cache`; the next compaction prunes first); null when the context holds too little tool output for the policy to prune',
  );
/** A finished turn's prune as a client receives it. */
export type TurnPruneView = z.output<typeof TurnPrune>;

/** `POST /v1/sessions/:id/messages` → 201: each message's seq and whether it was new. */
export const AppendResponse = z
  .object({
    messages: z.array(z.object({ id: z.string(), seq: z.number().int(), created: z.boolean() })),
    status: StatusOut,
    compaction: TriggeredCompaction.nullable().describe('The compaction this append triggered, if any'),
    prune: TurnPrune,
  })
  .meta({
    examples: [
      {
        messages: [
          { id: 'm1', seq: 1, created: true },
          { id: 'm2', seq: 2, created: true },
        ],
        status: statusExample,
        compaction: null,
        prune: null,
      },
    ],
  });
/** An append's answer as a client receives it. */
export type AppendMessagesResponse = z.output<typeof AppendResponse>;

/** `PATCH /v1/sessions/:id/messages/:messageId` → 200: the message as stored now, and the session's status. */
export const PatchResponse = MessageOut.extend({
  status: StatusOut,
  compaction: TriggeredCompaction.nullable().describe('The compaction this update triggered, if any'),
  prune: TurnPrune,
  taskResults: z
    .array(
      z.object({
        callId: z.string(),
        messageId: z.string().describe('The message that delivered the result into the view'),
        seq: z.number().int().nullable(),
      }),
    )
    .optional()
    .describe(
      'Present when the PATCH carried results of task calls a compaction had already covered (docs/TASKS.md): each was stored on its call and delivered into the view as a `<task-notification>` message naming the task',
    ),
}).meta({
  examples: [
    {
      ...messageExample,
      id: 'm2',
      seq: 2,
      role: 'assistant',
      finish: 'stop',
      parts: [{ type: 'text', text: 'Fixed: the constant is 42 now.', tokens: 10 }],
      usage: { input: 1500, output: 220, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
      status: statusExample,
      compaction: { id: 'cmp_01JH2Q4V7K3M5N8P9R0S', status: 'pending', reason: 'auto' },
      prune: null,
    },
  ],
});
/** A patched message as a client receives it. */
export type PatchMessageResponse = z.output<typeof PatchResponse>;
