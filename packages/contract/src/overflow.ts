/** `POST /v1/sessions/:id/overflow`: what the provider said about a turn; an overflow compacts now. */
import { z } from 'zod';
import { CompactionOut, compactionExample } from './compactions.js';
import { SafeText } from './primitives.js';
import { FINISH, UsageSchema } from './vocabulary.js';

/** A provider error (message, status, raw body) or a turn's usage, any subset. */
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
  .strict()
  .meta({
    examples: [
      {
        error:
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens.",
        status: 400,
      },
    ],
  });
/** An overflow report as a client writes it. */
export type OverflowRequest = z.input<typeof OverflowBody>;

/** Whether it was an overflow, how it was recognised, and the emergency compaction it started. */
export const OverflowOut = z
  .object({
    overflow: z.boolean(),
    kind: z
      .enum(['error', 'usage'])
      .nullable()
      .describe('error: the provider said so; usage: it reported a prompt larger than the window'),
    matched: z.string().nullable().describe('The overflow wording or rule that matched'),
    compaction: CompactionOut.nullable().describe(
      'The emergency compaction (or the one already active); null when no overflow, or auto is off',
    ),
  })
  .meta({
    examples: [
      {
        overflow: true,
        kind: 'error',
        matched: 'maximum context length',
        compaction: {
          ...compactionExample,
          reason: 'overflow',
          status: 'pending',
          force: true,
          keepRecentTokens: null,
          tokensBefore: null,
          tokensAfter: null,
          prunedParts: 0,
          prunedTokens: 0,
          messagesBefore: null,
          messagesAfter: null,
          boundarySeq: null,
          summaryMessageId: null,
          summaryMessageIds: [],
          model: null,
          usage: null,
          costUsd: null,
          attempts: 0,
          startedAt: null,
          finishedAt: null,
        },
      },
    ],
  });
/** An overflow verdict as a client receives it. */
export type OverflowResponse = z.output<typeof OverflowOut>;
