/** `GET /v1/sessions/:id/context`: exactly what the model should see next. */
import { z } from 'zod';
import { MessageOut, messageExample } from './messages';
import { JsonObject } from './primitives';

/** `?format=native` (stored messages) or `openai` (a Chat Completions `messages` array). */
export const ContextQuery = z.object({ format: z.enum(['native', 'openai']).default('native') }).strict();
/** The context query as a client writes it. */
export type ContextQueryInput = z.input<typeof ContextQuery>;

const ContextFields = z.object({
  messages: z
    .array(z.union([MessageOut, JsonObject]))
    .describe('native: stored messages (pruned outputs replaced); openai: Chat Completions messages'),
  compactionId: z.string().nullable(),
  boundarySeq: z.number().int().nullable(),
  tokens: z.number().int().describe('Stored token count of these messages'),
});

/** The messages the model sees next, the compaction they start from, and their stored size. */
export const ContextOut = ContextFields.meta({
  id: 'Context',
  examples: [
    {
      messages: [messageExample],
      compactionId: null,
      boundarySeq: null,
      tokens: 9,
    } satisfies z.output<typeof ContextFields>,
  ],
});
/** A context as a client receives it (`messages` are {@link Message}s for `native`). */
export type Context = z.output<typeof ContextOut>;
/** A context as a client receives it for `format=native`: every message is a stored {@link Message}. */
export type NativeContext = Omit<Context, 'messages'> & { messages: z.output<typeof MessageOut>[] };
/** One Chat Completions message of a `format=openai` context. */
export type OpenAIMessage = Record<string, unknown>;
