/** `GET /v1/sessions/:id/context`: exactly what the model should see next. */
import { z } from 'zod';
import { CompactionOut } from './compactions.js';
import { MessageOut, messageExample } from './messages.js';
import { CONTEXT_TOOL_NAMES, OpenAIToolOut } from './recall-tool.js';

/** The longest `?wait=` a context read accepts, in milliseconds. */
export const CONTEXT_WAIT_MAX_MS = 60_000;

/**
 * How a context was made to fit `usable`: `view` the stored view as it is (it fits); `prepared`
 * a prepared summary that covers the view's start, in place of what it covers; `interim` a fit
 * computed at read time from the stored view without the LLM (old outputs cleared, oversized parts
 * clamped, the oldest messages replaced by a marker that counts them); `over` nothing fits (the
 * pinned system messages alone exceed `usable`, or `fit=none` on a view over it).
 */
export const CONTEXT_FIT_KINDS = ['view', 'prepared', 'interim', 'over'] as const;
/** One of {@link CONTEXT_FIT_KINDS}. */
export type ContextFitKind = (typeof CONTEXT_FIT_KINDS)[number];

/**
 * `?format=native` (stored messages) or `openai` (a Chat Completions `messages` array);
 * `&tools=recall` (openai only) adds the Chat Completions definition of the recall tool;
 * `&fit=none` serves the stored view even when it is over `usable`; `&wait=<ms>` waits, that long
 * at most, for a running compaction when the view is over.
 */
export const ContextQuery = z
  .object({
    format: z.enum(['native', 'openai']).default('native'),
    fit: z
      .enum(['auto', 'none'])
      .default('auto')
      .describe(
        '`auto`: a view over `usable` is served fitted (`fit` says how); `none`: the stored view as it is',
      ),
    wait: z.coerce
      .number()
      .int()
      .min(0)
      .max(CONTEXT_WAIT_MAX_MS)
      .optional()
      .describe(
        'Milliseconds to wait, at most, for the active compaction to end when the view is over `usable`, ' +
          'before fitting it at read time',
      ),
    tools: z
      .enum(CONTEXT_TOOL_NAMES)
      .optional()
      .describe('With format=openai: also return this tool, as a Chat Completions `tools` entry'),
  })
  .strict()
  .superRefine((query, ctx) => {
    if (query.tools !== undefined && query.format !== 'openai') {
      ctx.addIssue({ code: 'custom', message: 'tools come with format=openai only', path: ['tools'] });
    }
    if (query.wait !== undefined && query.fit === 'none') {
      ctx.addIssue({ code: 'custom', message: 'wait comes with fit=auto only', path: ['wait'] });
    }
  });
/** The context query as a client writes it. */
export type ContextQueryInput = z.input<typeof ContextQuery>;

// The Chat Completions message shapes the API writes (packages/core's `toOpenAIMessages`), spelled
// as the OpenAI SDK's `ChatCompletionMessageParam` spells them, so a context's messages can be sent
// as they are without the contract depending on the SDK.

/** A content part of a user message: text, or an image by URL (an image file part). */
export const OpenAIContentPartOut = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string() }) }),
]);
/** A content part of a Chat Completions user message. */
export type OpenAIContentPart = z.output<typeof OpenAIContentPartOut>;

/** One `tool_calls` entry of an assistant message. */
export const OpenAIToolCallOut = z.object({
  id: z.string().describe('The stored callId, made valid and unique in this array'),
  type: z.literal('function'),
  function: z.object({
    name: z.string().describe('The stored tool name, reduced to `[a-zA-Z0-9_-]{1,64}`'),
    arguments: z
      .string()
      .describe('JSON text of an object (a non-object input is wrapped as `{"input": …}`)'),
  }),
});
/** A tool call of a Chat Completions assistant message. */
export type OpenAIToolCall = z.output<typeof OpenAIToolCallOut>;

/** A Chat Completions message: system, user, assistant (one step, with its tool calls) or a tool result. */
export const OpenAIMessageOut = z
  .discriminatedUnion('role', [
    z.object({ role: z.literal('system'), content: z.string() }),
    z.object({ role: z.literal('user'), content: z.union([z.string(), z.array(OpenAIContentPartOut)]) }),
    z.object({
      role: z.literal('assistant'),
      content: z.string().nullable().describe('null for a step that only calls tools'),
      tool_calls: z.array(OpenAIToolCallOut).optional(),
    }),
    z.object({
      role: z.literal('tool'),
      tool_call_id: z.string().describe('The `id` of the call in the assistant message before'),
      content: z.string(),
    }),
  ])
  .meta({ id: 'OpenAIMessage' });
/** One Chat Completions message of a `format=openai` context (assignable to the OpenAI SDK's `ChatCompletionMessageParam`). */
export type OpenAIMessage = z.output<typeof OpenAIMessageOut>;

const ContextFields = z.object({
  messages: z
    .array(z.union([MessageOut, OpenAIMessageOut]))
    .describe('native: stored messages (pruned outputs replaced); openai: Chat Completions messages'),
  compactionId: z.string().nullable(),
  boundarySeq: z.number().int().nullable(),
  tokens: z.number().int().describe('Stored token count of these messages'),
  fit: z
    .enum(CONTEXT_FIT_KINDS)
    .describe(
      'How these messages fit `usable`: `view` (the stored view, as it is), `prepared` (a prepared summary in ' +
        'place of what it covers), `interim` (fitted at read time without the LLM), `over` (they do not fit)',
    ),
  usable: z
    .number()
    .int()
    .nullable()
    .describe("The session's usable input in tokens (`status.usable`); null for an unlimited window"),
  activeCompaction: CompactionOut.nullable().describe(
    'The compaction running or requested now, as `status.activeCompaction`; null when none is',
  ),
  tools: z
    .array(OpenAIToolOut)
    .optional()
    .describe('Only when `tools` was asked for: the Chat Completions `tools` to send with `messages`'),
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
      fit: 'view',
      usable: 96_000,
      activeCompaction: null,
    } satisfies z.output<typeof ContextFields>,
  ],
});
/** A context as a client receives it (`messages` are {@link Message}s for `native`). */
export type Context = z.output<typeof ContextOut>;
/** A context as a client receives it for `format=native`: every message is a stored {@link Message}. */
export type NativeContext = Omit<Context, 'messages'> & { messages: z.output<typeof MessageOut>[] };
/** A context as a client receives it for `format=openai`: a Chat Completions `messages` array. */
export type OpenAIContext = Omit<Context, 'messages'> & { messages: OpenAIMessage[] };
