/** Sessions: created with a model and an optional policy, patched, read with their live status. */
import { z } from 'zod';
import { CompactionOut, compactionExample } from './compactions.js';
import { PolicyInputSchema } from './policy.js';
import { ClientId, Count, INT4_MAX, JsonObject, JsonObjectIn, SafeText, storable } from './primitives.js';
import { TaskCounts } from './tasks.js';

/** The smallest context window a session may have, besides 0 (unlimited); the smallest input limit. */
export const MIN_CONTEXT_WINDOW = 1_024;

/** A model's limits as a session states them (any of them may be left out). */
export interface ModelLimits {
  contextWindow?: number | undefined;
  maxOutputTokens?: number | undefined;
  inputLimit?: number | null | undefined;
}

/**
 * Why model limits cannot work, by field: a window of a few tokens holds no prompt, summary and
 * answer (the session would overflow after every turn, and with `auto` off, forever); an output
 * or input limit larger than the window is not a limit. Compares only the fields present; the
 * API checks the limits a session ends up with (the stated ones, completed from the known-model
 * table or the stored model) the same way. An output limit equal to the window is allowed: some
 * models publish it so (gpt-4: 8,192 and 8,192), and the output reserve takes at most a quarter
 * of the window whatever it says.
 */
export function modelLimitsIssues(model: ModelLimits): Array<{ path: keyof ModelLimits; message: string }> {
  const issues: Array<{ path: keyof ModelLimits; message: string }> = [];
  const window = model.contextWindow;
  if (window !== undefined && window !== 0 && window < MIN_CONTEXT_WINDOW) {
    issues.push({
      path: 'contextWindow',
      message: `contextWindow must be 0 (unlimited) or at least ${MIN_CONTEXT_WINDOW} tokens, got ${window}`,
    });
  }
  // A window refused above is the one issue: the limits are not compared with it.
  const limited = window !== undefined && window >= MIN_CONTEXT_WINDOW;
  if (limited && model.maxOutputTokens !== undefined && model.maxOutputTokens > window) {
    issues.push({
      path: 'maxOutputTokens',
      message: `maxOutputTokens (${model.maxOutputTokens}) must not exceed the context window (${window})`,
    });
  }
  const input = model.inputLimit;
  if (input != null && input < MIN_CONTEXT_WINDOW) {
    issues.push({
      path: 'inputLimit',
      message: `inputLimit must be at least ${MIN_CONTEXT_WINDOW} tokens (null: none), got ${input}`,
    });
  } else if (limited && input != null && input > window) {
    issues.push({
      path: 'inputLimit',
      message: `inputLimit (${input}) must not exceed the context window (${window})`,
    });
  }
  return issues;
}

function checkModelLimits(model: ModelLimits, ctx: z.RefinementCtx): void {
  // An input limit below the minimum is the field's own issue already: not twice.
  const input = model.inputLimit != null && model.inputLimit < MIN_CONTEXT_WINDOW ? null : model.inputLimit;
  for (const issue of modelLimitsIssues({ ...model, inputLimit: input })) {
    ctx.addIssue({ code: 'custom', message: issue.message, path: [issue.path] });
  }
}

/** USD per million tokens; the dearest published price is far below the cap, which keeps sums finite. */
const PricePerMillion = z.number().min(0).max(100_000);

/** A model's prices as a session states them (USD per million tokens). */
export const ModelPricingSchema = z
  .object({
    input: PricePerMillion,
    output: PricePerMillion,
    cacheRead: PricePerMillion.describe("What a prompt token read from the provider's cache costs"),
    cacheWrite: PricePerMillion.describe(
      'What storing a prompt token in the cache costs (the input price where writing is free)',
    ),
  })
  .strict()
  .meta({ id: 'ModelPricing' });

/** Seven days: the longest prompt-cache lifetime worth stating. */
export const MAX_CACHE_TTL_SECONDS = 604_800;

/** How the model's provider caches prompts. */
export const CacheBehaviourSchema = z
  .object({
    kind: z
      .enum(['explicit', 'automatic', 'none'])
      .describe(
        'explicit: breakpoints, writes cost extra (Anthropic); automatic: prefixes cached on their own',
      ),
    ttlSeconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_CACHE_TTL_SECONDS)
      .describe('How long a cached prefix lives without being read'),
  })
  .strict()
  .meta({ id: 'CacheBehaviour' });

const ModelFields = z
  .object({
    id: SafeText.min(1).max(200),
    provider: SafeText.min(1).max(100).optional(),
    contextWindow: Count.optional().describe(
      `0 = unlimited, else at least ${MIN_CONTEXT_WINDOW}; omitted = known-model table, else 128000`,
    ),
    maxOutputTokens: Count.optional().describe(
      'At most the context window; 0 = not published (the output reserve is then 32,000, within a quarter of the window); omitted = known-model table, else 32000',
    ),
    inputLimit: z
      .number()
      .int()
      .min(MIN_CONTEXT_WINDOW, `inputLimit must be at least ${MIN_CONTEXT_WINDOW} tokens (null: none)`)
      .max(INT4_MAX)
      .nullable()
      .optional()
      .describe('A prompt limit below the window, if the provider has one; at most the context window'),
    pricing: ModelPricingSchema.nullable()
      .optional()
      .describe("Overrides the catalog's prices; null or omitted = the catalog's (none for unknown models)"),
    cache: CacheBehaviourSchema.nullable()
      .optional()
      .describe("Overrides the catalog's cache behaviour; null or omitted = the catalog's"),
  })
  .strict();

const ModelIn = ModelFields.superRefine(checkModelLimits);

/** `POST /v1/sessions`: idempotent by client id. */
export const CreateSessionBody = z
  .object({
    id: ClientId.optional().describe('Client id; the same id and body again returns the session'),
    model: ModelIn,
    policy: PolicyInputSchema.superRefine(storable).optional(),
    metadata: JsonObjectIn.optional(),
  })
  .strict()
  .meta({
    examples: [
      {
        id: 'support-42',
        model: { id: 'gpt-4o', contextWindow: 128_000 },
        policy: { preset: 'opencode', keepRecent: { manualTokens: 8000 } },
        metadata: { user: 'u_981' },
      },
    ],
  });
/** A session creation as the API hands it on once validated. */
export type CreateSessionInput = z.output<typeof CreateSessionBody>;
/** A session creation as a client writes it. */
export type CreateSessionRequest = z.input<typeof CreateSessionBody>;

/** `PATCH /v1/sessions/:id`: merges model, deep-merges policy overrides, merges metadata. */
export const PatchSessionBody = z
  .object({
    model: ModelFields.partial()
      .strict()
      .superRefine(checkModelLimits)
      .optional()
      .describe(
        'Merged into the stored model; the limits it ends up with must hold together; ' +
          'pricing or cache null = back to the catalog',
      ),
    policy: PolicyInputSchema.superRefine(storable)
      .optional()
      .describe('Deep-merged into the stored policy overrides'),
    metadata: JsonObjectIn.optional().describe('Merged into the stored metadata; a null value removes a key'),
  })
  .strict()
  .refine((b) => b.model !== undefined || b.policy !== undefined || b.metadata !== undefined, {
    message: 'nothing to change: send model, policy or metadata',
  })
  .meta({ examples: [{ policy: { auto: false }, metadata: { user: null, plan: 'pro' } }] });
/** A session patch as a client writes it. */
export type PatchSessionRequest = z.input<typeof PatchSessionBody>;

const StatusFields = z.object({
  tokens: z
    .number()
    .int()
    .describe(
      'Estimate of the next prompt: the exact stored count of the context, plus what the latest usage ' +
        'report since the last compaction shows the provider saw besides (tool schemas, an unstored ' +
        'system prompt, framing: `calibrationTokens`, at most a quarter of `usable`). A report never ' +
        'brings it below the stored count',
    ),
  usable: z
    .number()
    .int()
    .nullable()
    .describe('Tokens the prompt may use before it overflows; null for an unlimited window'),
  percent: z
    .number()
    .nullable()
    .describe(
      'How close automatic compaction is, in percent: tokens / usable; with a tokens trigger (the topic ' +
        'preset), the history (tokens − pinnedTokens) / triggerTokens',
    ),
  triggerTokens: z
    .number()
    .int()
    .nullable()
    .describe(
      "The trigger's threshold: auto compaction fires once tokens are above it (the ratio trigger: at it; " +
        'a tokens trigger counts the history without pinned system messages); null for an unlimited window',
    ),
  overflow: z.boolean(),
  pinnedTokens: z
    .number()
    .int()
    .describe('Tokens of the pinned system messages (never compacted), part of `tokens`'),
  cannotFit: z
    .boolean()
    .describe(
      'The pinned system messages alone exceed `usable`: no compaction can make the session fit ' +
        '(compactions fail with context_cannot_fit); shorten the system prompt or use a larger window',
    ),
  contextWindow: z.number().int(),
  estimate: z
    .enum(['hybrid', 'stored'])
    .describe('hybrid when a usage report since the last compaction calibrates it'),
  calibrationTokens: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'What the latest usage report adds to `tokens` over the exact stored count, after the cap of a ' +
        'quarter of `usable` (0 without a report, in exact mode, for an unlimited window, or when the ' +
        'report is below the stored count: a report never subtracts)',
    ),
  contextMessages: z.number().int(),
  messagesSinceCompaction: z.number().int(),
  activeCompaction: CompactionOut.nullable(),
  lastCompaction: CompactionOut.nullable(),
});

/** The status of the example session: compacted once, comfortably inside its window. */
export const statusExample: z.output<typeof StatusFields> = {
  tokens: 14_310,
  usable: 96_000,
  percent: 14.9,
  triggerTokens: 96_000,
  overflow: false,
  pinnedTokens: 1_240,
  cannotFit: false,
  contextWindow: 128_000,
  estimate: 'hybrid',
  calibrationTokens: 1_180,
  contextMessages: 27,
  messagesSinceCompaction: 4,
  activeCompaction: null,
  lastCompaction: compactionExample,
};

/** Where a session stands: its estimated next prompt against the usable window, and compactions. */
export const StatusOut = StatusFields.meta({ id: 'SessionStatus', examples: [statusExample] });
/** A session status as the API computes and a client receives it. */
export type SessionStatus = z.output<typeof StatusOut>;

const SessionFields = z.object({
  id: z.string(),
  model: z.object({
    id: z.string(),
    provider: z.string(),
    contextWindow: z.number().int(),
    maxOutputTokens: z.number().int(),
    inputLimit: z.number().int().nullable(),
    pricing: ModelPricingSchema.nullable().describe(
      'Prices in force (override, else catalog); null = unknown',
    ),
    cache: CacheBehaviourSchema.describe('Cache behaviour in force (override, else catalog)'),
  }),
  policy: JsonObject.describe('The overrides as sent (preset + changes)'),
  effectivePolicy: JsonObject.describe('The policy in force: preset, defaults and overrides resolved'),
  metadata: JsonObject,
  createdAt: z.string(),
  updatedAt: z.string(),
  status: StatusOut,
  tasks: TaskCounts.optional().describe(
    "The session's running sub-agents and background tasks, and duplicate dispatches among them (`GET /v1/sessions/{id}`; `GET …/tasks` lists them)",
  ),
});

/** A session: its model, policy (as sent and in force), metadata and status. */
export const SessionOut = SessionFields.meta({
  id: 'Session',
  examples: [
    {
      id: 'support-42',
      model: {
        id: 'gpt-4o',
        provider: 'openai',
        contextWindow: 128_000,
        maxOutputTokens: 16_384,
        inputLimit: null,
        pricing: { input: 2.5, output: 10, cacheRead: 1.25, cacheWrite: 2.5 },
        cache: { kind: 'automatic', ttlSeconds: 300 },
      },
      policy: { preset: 'opencode', keepRecent: { manualTokens: 8000 } },
      effectivePolicy: { preset: 'opencode', auto: true, prune: true, strategy: 'summarize' },
      metadata: { user: 'u_981' },
      createdAt: '2026-01-05T09:40:00.000Z',
      updatedAt: '2026-01-05T09:40:00.000Z',
      status: statusExample,
    } satisfies z.output<typeof SessionFields>,
  ],
});
/** A session as a client receives it. */
export type Session = z.output<typeof SessionOut>;
