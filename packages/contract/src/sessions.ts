/** Sessions: created with a model and an optional policy, patched, read with their live status. */
import { z } from 'zod';
import { CompactionOut, compactionExample } from './compactions';
import { PolicyInputSchema } from './policy';
import { ClientId, Count, INT4_MAX, JsonObject, JsonObjectIn, SafeText, storable } from './primitives';

const ModelIn = z
  .object({
    id: SafeText.min(1).max(200),
    provider: SafeText.min(1).max(100).optional(),
    contextWindow: Count.optional().describe('0 = unlimited; omitted = known-model table, else 128000'),
    maxOutputTokens: Count.optional(),
    inputLimit: z.number().int().positive().max(INT4_MAX).nullable().optional(),
  })
  .strict();

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
    model: ModelIn.partial().strict().optional().describe('Merged into the stored model'),
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
    .describe('Hybrid estimate of the next prompt: last reported usage + stored counts since'),
  usable: z
    .number()
    .int()
    .nullable()
    .describe('Tokens the prompt may use before it overflows; null for an unlimited window'),
  percent: z.number().nullable().describe('tokens / usable, in percent'),
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
  overflow: false,
  pinnedTokens: 1_240,
  cannotFit: false,
  contextWindow: 128_000,
  estimate: 'hybrid',
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
  }),
  policy: JsonObject.describe('The overrides as sent (preset + changes)'),
  effectivePolicy: JsonObject.describe('The policy in force: preset, defaults and overrides resolved'),
  metadata: JsonObject,
  createdAt: z.string(),
  updatedAt: z.string(),
  status: StatusOut,
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
