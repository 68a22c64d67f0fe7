import { z } from 'zod';
import { ClientId, INT4_MAX, SafeText } from './common';
import { FINISH, UsageSchema } from './messages';

const STRATEGIES = ['summarize', 'truncate', 'topic'] as const;
const STEPS = ['prune', 'summarize', 'finalize'] as const;

export const CompactionOut = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    reason: z.enum(['auto', 'manual', 'overflow']),
    strategy: z.enum(STRATEGIES),
    status: z.enum(['pending', 'running', 'completed', 'failed', 'skipped']),
    step: z.enum(STEPS).nullable(),
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
    requestedAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .meta({ id: 'Compaction' });
export type CompactionView = z.infer<typeof CompactionOut>;

export const CompactionStepOut = z
  .object({
    step: z.enum(STEPS),
    attempt: z.number().int(),
    status: z.enum(['running', 'completed', 'failed']),
    startedAt: z.string(),
    finishedAt: z.string().nullable(),
    detail: z.record(z.string(), z.unknown()).describe('Numbers and labels of the step; never message text'),
  })
  .meta({ id: 'CompactionStep' });
export type CompactionStepView = z.infer<typeof CompactionStepOut>;

export const CompactionDetailOut = CompactionOut.extend({
  steps: z.array(CompactionStepOut).describe('Every step attempt, in the order they ran'),
}).meta({ id: 'CompactionWithSteps' });

/** The largest `instructions`, in UTF-8 bytes. */
export const MAX_INSTRUCTIONS_BYTES = 8 * 1024;

export const CreateCompactionBody = z
  .object({
    keepRecentTokens: z
      .number()
      .int()
      .positive()
      .max(INT4_MAX)
      .optional()
      .describe("Tokens of recent history kept verbatim; at most the session's context window"),
    instructions: SafeText.refine((text) => Buffer.byteLength(text, 'utf8') <= MAX_INSTRUCTIONS_BYTES, {
      message: `at most ${MAX_INSTRUCTIONS_BYTES} bytes (UTF-8)`,
    })
      .optional()
      .describe('Extra summary instructions ("focus on the API design")'),
    strategy: z.enum(STRATEGIES).optional().describe("Defaults to the session policy's strategy"),
  })
  .strict()
  .optional()
  .describe('Every field is optional; so is the body');
export type CreateCompactionInput = NonNullable<z.infer<typeof CreateCompactionBody>>;

/** `Idempotency-Key`: the same key and body return the compaction it created; another body is a 409. */
export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x20-\x7e]+$/, 'printable ASCII')
    .optional()
    .describe('Makes the request safe to retry: the same key and body return the same compaction'),
});

export const CompactionParams = z.object({ id: ClientId });

export const CompactionListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    before: ClientId.optional().describe(
      "A compaction id (a page's nextBefore): the compactions requested before it",
    ),
  })
  .strict();

export const CompactionPage = z.object({
  compactions: z.array(CompactionOut).describe('Newest first'),
  nextBefore: z.string().nullable().describe('Pass as `before` for the next page; null on the last one'),
});

export const PruneOut = z.object({ jobId: z.string() });

export const OverflowBody = z
  .object({
    error: SafeText.max(64 * 1024)
      .nullable()
      .optional()
      .describe("The provider's error message"),
    status: z.number().int().min(100).max(599).nullable().optional().describe('Its HTTP status'),
    body: SafeText.max(256 * 1024)
      .nullable()
      .optional()
      .describe('The raw response body, when the message alone does not say it'),
    usage: UsageSchema.nullable().optional().describe('The usage the provider reported for the turn'),
    finish: z.enum(FINISH).nullable().optional().describe("The turn's finish reason, with usage"),
  })
  .strict();

export const OverflowOut = z.object({
  overflow: z.boolean(),
  kind: z
    .enum(['error', 'usage'])
    .nullable()
    .describe('error: the provider said so; usage: it reported a prompt larger than the window'),
  matched: z.string().nullable().describe('The overflow wording or rule that matched'),
  compaction: CompactionOut.nullable().describe(
    'The emergency compaction (or the one already active); null when no overflow, or auto is off',
  ),
});
