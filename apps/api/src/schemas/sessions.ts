import { z } from 'zod';
import { PolicyInputSchema } from '@compactor/core';
import { ClientId, Count, INT4_MAX, JsonObject, JsonObjectIn, SafeText, storable } from './common';
import { CompactionOut } from './compactions';

const ModelIn = z
  .object({
    id: SafeText.min(1).max(200),
    provider: SafeText.min(1).max(100).optional(),
    contextWindow: Count.optional().describe('0 = unlimited; omitted = known-model table, else 128000'),
    maxOutputTokens: Count.optional(),
    inputLimit: z.number().int().positive().max(INT4_MAX).nullable().optional(),
  })
  .strict();

export const CreateSessionBody = z
  .object({
    id: ClientId.optional().describe('Client id; the same id and body again returns the session'),
    model: ModelIn,
    policy: PolicyInputSchema.superRefine(storable).optional(),
    metadata: JsonObjectIn.optional(),
  })
  .strict();
export type CreateSessionInput = z.infer<typeof CreateSessionBody>;

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
  });

export const StatusOut = z
  .object({
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
    contextWindow: z.number().int(),
    estimate: z
      .enum(['hybrid', 'stored'])
      .describe('hybrid when a usage report since the last compaction calibrates it'),
    contextMessages: z.number().int(),
    messagesSinceCompaction: z.number().int(),
    activeCompaction: CompactionOut.nullable(),
    lastCompaction: CompactionOut.nullable(),
  })
  .meta({ id: 'SessionStatus' });
export type StatusView = z.infer<typeof StatusOut>;

export const SessionOut = z
  .object({
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
  })
  .meta({ id: 'Session' });
export type SessionView = z.infer<typeof SessionOut>;
