/** Compactions: requesting one, its record and steps, paging through a session's history of them. */
import { z } from 'zod';
import { CacheEffectOut } from './cache-effect.js';
import { ClientId, IdempotencyKey, INT4_MAX, SafeText, utf8ByteLength } from './primitives.js';
import { COMPACTION_REASONS, COMPACTION_STATUSES, COMPACTION_STEPS, STRATEGIES } from './vocabulary.js';

const CompactionFields = z.object({
  id: z.string(),
  sessionId: z.string(),
  reason: z.enum(COMPACTION_REASONS),
  strategy: z
    .enum(STRATEGIES)
    .describe(
      'The strategy asked for. A summarize compaction whose summarizer failed for good keeps `summarize`; `fallback` says the truncate text was written instead',
    ),
  status: z
    .enum(COMPACTION_STATUSES)
    .describe(
      '`pending → running → completed | failed | skipped`; `reverted`: a completed compaction undone by `POST /v1/compactions/{id}/revert` (the one before it defines the context again)',
    ),
  step: z.enum(COMPACTION_STEPS).nullable(),
  attempts: z.number().int(),
  keepRecentTokens: z
    .number()
    .int()
    .nullable()
    .describe('The keep-recent budget asked for; null = the policy default'),
  force: z.boolean().describe('Emergency: keep only the newest messages if no clean cut exists'),
  tokensBefore: z.number().int().nullable(),
  tokensAfter: z.number().int().nullable(),
  prunedParts: z.number().int(),
  prunedTokens: z.number().int(),
  messagesBefore: z.number().int().nullable(),
  messagesAfter: z.number().int().nullable(),
  boundarySeq: z.number().int().nullable().describe('First kept seq'),
  summaryMessageId: z.string().nullable(),
  summaryMessageIds: z.array(z.string()).describe('Every message the compaction wrote, in order'),
  model: z.string().nullable(),
  usage: z.object({ input: z.number().int(), output: z.number().int() }).nullable(),
  costUsd: z.number().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  fallback: z
    .object({
      code: z.string().describe('The summarizer failure code, as `error.code` of a failed compaction'),
      message: z.string().describe("The failure's message, as `error.message` of a failed compaction"),
    })
    .nullable()
    .describe(
      'Set on a completed compaction whose summarizer failed for good, when the policy\'s `fallback: "truncate"` wrote the truncate text in place of an LLM summary; null otherwise',
    ),
  requestedAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  revertedAt: z.string().nullable().describe('When a revert undid it (status `reverted`); null otherwise'),
  cache: CacheEffectOut.nullable().describe(
    "What the completed compaction (its prune step included) cost in the provider's prompt cache; null unless completed",
  ),
});

/** A completed manual compaction, the example of every response that carries one. */
export const compactionExample: z.output<typeof CompactionFields> = {
  id: 'cmp_01JH2Q4V7K3M5N8P9R0S',
  sessionId: 'support-42',
  reason: 'manual',
  strategy: 'summarize',
  status: 'completed',
  step: null,
  attempts: 1,
  keepRecentTokens: 8000,
  force: false,
  tokensBefore: 96_512,
  tokensAfter: 11_204,
  prunedParts: 14,
  prunedTokens: 52_310,
  messagesBefore: 118,
  messagesAfter: 23,
  boundarySeq: 96,
  summaryMessageId: 'msg_01JH2Q5B2C3D4E5F6G7H',
  summaryMessageIds: ['msg_01JH2Q5B2C3D4E5F6G7H'],
  model: 'gpt-4o-mini',
  usage: { input: 31_000, output: 1_450 },
  costUsd: 0.0055,
  error: null,
  fallback: null,
  requestedAt: '2026-01-05T10:02:00.000Z',
  startedAt: '2026-01-05T10:02:00.120Z',
  finishedAt: '2026-01-05T10:02:07.800Z',
  revertedAt: null,
  cache: { invalidatedTokens: 96_000, rewriteCostUsd: 0, savingPerTurnUsd: 0.0063981, breakEvenTurns: 0 },
};

/** A compaction's record: reason, strategy, status, boundary, sizes before and after, LLM cost. */
export const CompactionOut = CompactionFields.meta({ id: 'Compaction', examples: [compactionExample] });
/** A compaction as a client receives it. */
export type Compaction = z.output<typeof CompactionOut>;

const CompactionStepFields = z.object({
  step: z.enum(COMPACTION_STEPS),
  attempt: z.number().int(),
  status: z.enum(['running', 'completed', 'failed']),
  startedAt: z.string(),
  finishedAt: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()).describe('Numbers and labels of the step; never message text'),
});
const stepExample: z.output<typeof CompactionStepFields> = {
  step: 'summarize',
  attempt: 1,
  status: 'completed',
  startedAt: '2026-01-05T10:02:00.400Z',
  finishedAt: '2026-01-05T10:02:07.600Z',
  detail: { messages: 95, chunks: 1, inputTokens: 31_000, outputTokens: 1_450 },
};

/** One attempt of one step of a compaction. */
export const CompactionStepOut = CompactionStepFields.meta({ id: 'CompactionStep', examples: [stepExample] });
/** A step attempt as a client receives it. */
export type CompactionStep = z.output<typeof CompactionStepOut>;

/** `GET /v1/compactions/:id`: the compaction with every step attempt. */
export const CompactionDetailOut = CompactionFields.extend({
  steps: z.array(CompactionStepOut).describe('Every step attempt, in the order they ran'),
}).meta({ id: 'CompactionWithSteps', examples: [{ ...compactionExample, steps: [stepExample] }] });
/** A compaction with its steps, as a client receives it. */
export type CompactionWithSteps = z.output<typeof CompactionDetailOut>;

/** The largest `instructions`, in UTF-8 bytes. */
export const MAX_INSTRUCTIONS_BYTES = 8 * 1024;

/** `POST /v1/sessions/:id/compactions`: every field is optional, and so is the body. */
export const CreateCompactionBody = z
  .object({
    keepRecentTokens: z
      .number()
      .int()
      .positive()
      .max(INT4_MAX)
      .optional()
      .describe("Tokens of recent history kept verbatim; at most the session's context window"),
    instructions: SafeText.refine((text) => utf8ByteLength(text) <= MAX_INSTRUCTIONS_BYTES, {
      message: `at most ${MAX_INSTRUCTIONS_BYTES} bytes (UTF-8)`,
    })
      .optional()
      .describe('Extra summary instructions ("focus on the API design")'),
    strategy: z.enum(STRATEGIES).optional().describe("Defaults to the session policy's strategy"),
  })
  .strict()
  .optional()
  .describe('Every field is optional; so is the body')
  .meta({
    examples: [{ keepRecentTokens: 8000, instructions: 'Keep the API decisions', strategy: 'summarize' }],
  });
/** A compaction request's body (validated; `undefined` when none was sent). */
export type CreateCompactionInput = NonNullable<z.output<typeof CreateCompactionBody>>;
/** A compaction request's body as a client writes it. */
export type CreateCompactionRequest = NonNullable<z.input<typeof CreateCompactionBody>>;

/**
 * `Idempotency-Key`: bound to the first body sent with it, whether that request created a
 * compaction or joined the active one. The same key and body return that compaction; another
 * body is a 409.
 */
export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': IdempotencyKey.optional().describe(
    'Makes the request safe to retry: the key is bound to its first body, and the same key and body return the compaction that request created or joined (even after it finished); the key with another body is a 409',
  ),
});

/** `:id` of `GET /v1/compactions/:id`. */
export const CompactionParams = z.object({ id: ClientId });

/** `GET /v1/sessions/:id/compactions?limit=&before=`. */
export const CompactionListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    before: ClientId.optional().describe(
      "A compaction id (a page's nextBefore): the compactions requested before it",
    ),
  })
  .strict();
/** The compaction list query as a client writes it. */
export type CompactionListQueryInput = z.input<typeof CompactionListQuery>;

/** A page of a session's compactions, newest first. */
export const CompactionPage = z
  .object({
    compactions: z.array(CompactionOut).describe('Newest first'),
    nextBefore: z.string().nullable().describe('Pass as `before` for the next page; null on the last one'),
  })
  .meta({ examples: [{ compactions: [compactionExample], nextBefore: null }] });
/** A compaction page as a client receives it. */
export type CompactionPageResponse = z.output<typeof CompactionPage>;

/** `POST /v1/sessions/:id/prune`: the prune-only job started. */
export const PruneOut = z
  .object({ jobId: z.string() })
  .meta({ examples: [{ jobId: 'prn_01JH2Q6C7D8E9F0G1H2J' }] });
/** A started prune job as a client receives it. */
export type PruneResponse = z.output<typeof PruneOut>;
