import { z } from 'zod';

export const CompactionOut = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    reason: z.enum(['auto', 'manual', 'overflow']),
    strategy: z.enum(['summarize', 'truncate', 'topic']),
    status: z.enum(['pending', 'running', 'completed', 'failed', 'skipped']),
    step: z.enum(['prune', 'summarize', 'finalize']).nullable(),
    attempts: z.number().int(),
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
