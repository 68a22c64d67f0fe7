/** `GET /v1/sessions/:id/events`: the session's progress as Server-Sent Events. */
import { z } from 'zod';
import { CacheEffectOut } from './cache-effect.js';
import { COMPACTION_REASONS, COMPACTION_STEPS, STRATEGIES } from './vocabulary.js';

/** Every event type a session's stream carries (the API checks this equals @compactor/workflow's list). */
export const SESSION_EVENT_TYPES = [
  'compaction.requested',
  'compaction.started',
  'compaction.step',
  'compaction.completed',
  'compaction.failed',
  'compaction.skipped',
  'compaction.reverted',
  'session.compacted',
  'prune.completed',
  'prune.skipped',
  'session.deleted',
  'task.started',
  'task.finished',
] as const;
/** One of {@link SESSION_EVENT_TYPES}. */
export type SessionEventType = (typeof SESSION_EVENT_TYPES)[number];

/**
 * The last event of a session's stream: the session was deleted (`compactionId` null, `data`
 * empty). The API ends every open stream of the session after it; there is nothing to reconnect to.
 */
export const SESSION_DELETED_EVENT = 'session.deleted' satisfies SessionEventType;

const Int = z.number().int();
/** A size the compaction's record holds (null only on a record that never measured it). */
const Size = z.number().int().nullable();

/** `compaction.requested`: a compaction was written and is about to be queued. */
export const CompactionRequestedData = z.object({
  reason: z.enum(COMPACTION_REASONS),
  strategy: z.enum(STRATEGIES),
});

/** `compaction.started`: a worker claimed the compaction (`attempt` counts claims, 1 first). */
export const CompactionStartedData = z.object({
  attempt: Int,
  reason: z.enum(COMPACTION_REASONS),
});

/** `compaction.step`: the attempt entered a step. */
export const CompactionStepData = z.object({
  step: z.enum(COMPACTION_STEPS),
  attempt: Int,
});

/** `compaction.completed`: the view's sizes before and after, and the boundary (first kept seq). */
export const CompactionCompletedData = z.object({
  tokensBefore: Size,
  tokensAfter: Size,
  messagesBefore: Size,
  messagesAfter: Size,
  boundarySeq: Size.describe('First kept seq'),
  fallback: z
    .object({ code: z.string().describe('The summarizer failure code, as `compaction.failed` carries one') })
    .nullable()
    .describe('Set when the truncate fallback wrote the summary; null otherwise'),
  // Optional: servers from before the cache model send events without it, and a newer client
  // must not drop them.
  cache: CacheEffectOut.nullable()
    .optional()
    .describe("What the compaction cost in the provider's prompt cache"),
});

/** `compaction.failed`: the compaction ended `failed` (its record holds the message). */
export const CompactionFailedData = z.object({
  status: z.literal('failed'),
  error: z.object({ code: z.string() }),
});

/** `compaction.skipped`: nothing to compact. */
export const CompactionSkippedData = z.object({
  reason: z.string().describe('Why nothing was compacted: a label, never message text'),
});

/** `compaction.reverted`: a client undid the compaction; the view is the one before it again. */
export const CompactionRevertedData = z.object({
  restoredCompactionId: z
    .string()
    .nullable()
    .describe('The compaction that defines the context view again; null when none does (the whole history)'),
  tokens: Int.describe("The restored view's size, as the session status reports it"),
  contextMessages: Int.describe('Messages in the restored view'),
});

/** `session.compacted`: what a client needs to go on after a compaction completed. */
export const SessionCompactedData = CompactionCompletedData.extend({
  continueWith: z
    .object({
      role: z.literal('user'),
      text: z.string(),
      metadata: z.object({ type: z.literal('compaction_continue') }),
    })
    .optional()
    .describe(
      "The user message to append so the agent goes on (the policy's `continueMessage`), after an automatic compaction when the policy has one; its metadata marks it so the trigger does not count it as new history",
    ),
  followUp: z
    .object({ compactionId: z.string() })
    .optional()
    .describe(
      'The compaction already requested because messages appended meanwhile left the session over its trigger: wait for it before the next model call',
    ),
});

/** `prune.completed`: a prune job marked `parts` tool outputs (`tokens` of them) as pruned. */
export const PruneCompletedData = z.object({
  jobId: z.string(),
  parts: Int,
  tokens: Int,
  cache: CacheEffectOut.optional().describe(
    "What the marks cost in the provider's prompt cache (absent from servers before the cache model)",
  ),
});

/**
 * `prune.skipped`: a finished turn's prune waited because the provider's prompt cache is warm and
 * the prune would not repay the cache it breaks (policy `pruning.cacheAware`); the next
 * compaction prunes first.
 */
export const PruneSkippedData = z.object({
  reason: z.enum(['cache_warm']),
  cache: CacheEffectOut.describe('What the prune would have cost in the cache, as estimated'),
});

/** `session.deleted`: nothing but the fact. */
export const SessionDeletedData = z.object({});

/**
 * `task.started` / `task.finished`: a sub-agent or background task call was recorded, or its
 * result arrived (docs/TASKS.md). Labels only: never what it was asked nor its result.
 */
export const TaskEventData = z.object({
  callId: z.string().describe("The task's call id"),
  tool: z.string(),
  status: z.enum(['pending', 'running', 'completed', 'error']),
});

/** Each event type's `data` schema. */
export const SESSION_EVENT_DATA = {
  'compaction.requested': CompactionRequestedData,
  'compaction.started': CompactionStartedData,
  'compaction.step': CompactionStepData,
  'compaction.completed': CompactionCompletedData,
  'compaction.failed': CompactionFailedData,
  'compaction.skipped': CompactionSkippedData,
  'compaction.reverted': CompactionRevertedData,
  'session.compacted': SessionCompactedData,
  'prune.completed': PruneCompletedData,
  'prune.skipped': PruneSkippedData,
  'session.deleted': SessionDeletedData,
  'task.started': TaskEventData,
  'task.finished': TaskEventData,
} as const satisfies Record<SessionEventType, z.ZodType>;

/** Each event type's `data`: what a producer must announce and what a client receives. */
export type SessionEventMap = { [T in SessionEventType]: z.output<(typeof SESSION_EVENT_DATA)[T]> };

/** The event types about one compaction (`compactionId` set); the others carry null. */
export type CompactionEventType = Exclude<
  SessionEventType,
  'prune.completed' | 'prune.skipped' | 'session.deleted' | 'task.started' | 'task.finished'
>;

const CompactionId = z.string();
const NoCompaction = z.null().describe('null: a prune job, or the session itself');

/** One event block's envelope, `data` typed by its type. */
function eventOf<T extends SessionEventType, C extends z.ZodString | z.ZodNull>(type: T, compactionId: C) {
  return z
    .object({
      type: z.literal(type),
      sessionId: z.string(),
      compactionId,
      at: z.string(),
      data: SESSION_EVENT_DATA[type],
    })
    .meta({ title: type });
}

const eventExample = {
  type: 'compaction.completed' as const,
  sessionId: 'support-42',
  compactionId: 'cmp_01JH2Q4V7K3M5N8P9R0S',
  at: '2026-01-05T10:02:07.800Z',
  data: {
    tokensBefore: 96_512,
    tokensAfter: 11_204,
    messagesBefore: 118,
    messagesAfter: 23,
    boundarySeq: 96,
    fallback: null,
    cache: { invalidatedTokens: 96_000, rewriteCostUsd: 0, savingPerTurnUsd: 0.0063981, breakEvenTurns: 0 },
  },
};

/**
 * The `data:` of one event block (`event: <type>`), discriminated on `type`: counts and labels,
 * never message text, except `session.compacted`'s `continueWith` (the message to append so the
 * agent goes on). `compactionId` is null for `prune.*` and `session.deleted`.
 */
export const SessionEventPayload = z
  .discriminatedUnion('type', [
    eventOf('compaction.requested', CompactionId),
    eventOf('compaction.started', CompactionId),
    eventOf('compaction.step', CompactionId),
    eventOf('compaction.completed', CompactionId),
    eventOf('compaction.failed', CompactionId),
    eventOf('compaction.skipped', CompactionId),
    eventOf('compaction.reverted', CompactionId),
    eventOf('session.compacted', CompactionId),
    eventOf('prune.completed', NoCompaction),
    eventOf('prune.skipped', NoCompaction),
    eventOf('session.deleted', NoCompaction),
    eventOf('task.started', NoCompaction),
    eventOf('task.finished', NoCompaction),
  ])
  .meta({ id: 'SessionEvent', examples: [eventExample] });
/** One session event as a client receives it: narrow on `type` to read its `data`. */
export type SessionEventMessage = z.output<typeof SessionEventPayload>;
/** The event of type `T`. */
export type SessionEventOf<T extends SessionEventType> = Extract<SessionEventMessage, { type: T }>;

/** The stream as it goes over the wire: `: connected`, event blocks, `: keepalive` comments. */
export const EventStreamText = z
  .string()
  .describe('text/event-stream')
  .meta({
    examples: [
      `: connected\n\nevent: ${eventExample.type}\ndata: ${JSON.stringify(eventExample)}\n\n: keepalive\n\n`,
    ],
  });
