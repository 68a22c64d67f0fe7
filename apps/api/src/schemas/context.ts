import { z } from 'zod';
import { JsonObject } from './common';
import { MessageOut } from './messages';

export const ContextQuery = z.object({ format: z.enum(['native', 'openai']).default('native') }).strict();

export const ContextOut = z
  .object({
    messages: z
      .array(z.union([MessageOut, JsonObject]))
      .describe('native: stored messages (pruned outputs replaced); openai: Chat Completions messages'),
    compactionId: z.string().nullable(),
    boundarySeq: z.number().int().nullable(),
    tokens: z.number().int().describe('Stored token count of these messages'),
  })
  .meta({ id: 'Context' });
