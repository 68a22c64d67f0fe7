import { z } from 'zod';
import { ClientId, Count, INT4_MAX, JsonObject, JsonObjectIn, SafeJson, SafeText } from './common';

export const FINISH = ['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other'] as const;
const TOOL_STATUS = ['pending', 'running', 'completed', 'error'] as const;

export const UsageSchema = z
  .object({
    input: Count.describe('Prompt tokens not read from or written to cache'),
    output: Count,
    reasoning: Count.default(0),
    cacheRead: Count.default(0),
    cacheWrite: Count.default(0),
  })
  .strict()
  .meta({ id: 'Usage' });

const TextPartIn = z.object({ type: z.literal('text'), text: SafeText }).strict();
const ReasoningPartIn = z.object({ type: z.literal('reasoning'), text: SafeText }).strict();
const ToolPartIn = z
  .object({
    type: z.literal('tool'),
    callId: SafeText.min(1).max(200),
    tool: SafeText.min(1).max(200),
    status: z.enum(TOOL_STATUS),
    input: SafeJson.optional(),
    output: SafeText.nullable().optional(),
    error: SafeText.nullable().optional(),
  })
  .strict()
  .refine((p) => p.status !== 'completed' || typeof p.output === 'string', {
    message: 'a completed tool part needs its output (a string, possibly empty)',
    path: ['output'],
  })
  .refine((p) => p.status !== 'error' || typeof p.error === 'string', {
    message: 'a tool part with status error needs its error text',
    path: ['error'],
  });
const FilePartIn = z
  .object({
    type: z.literal('file'),
    mime: SafeText.min(1),
    filename: SafeText.nullable().optional(),
    url: SafeText.min(1),
  })
  .strict();

export const PartIn = z.discriminatedUnion('type', [TextPartIn, ReasoningPartIn, ToolPartIn, FilePartIn]);
export type PartInput = z.infer<typeof PartIn>;

const MessageErrorIn = z.union([
  SafeText.transform((message) => ({ message })),
  z.object({ message: SafeText, code: SafeText.optional() }).strict(),
]);

export const MessageIn = z
  .object({
    id: ClientId.optional().describe('Client id: re-posting it with identical content is a no-op'),
    role: z.enum(['user', 'assistant', 'system']),
    parts: z.array(PartIn).max(5000),
    finish: z.enum(FINISH).nullable().optional(),
    error: MessageErrorIn.nullable().optional(),
    usage: UsageSchema.nullable().optional().describe('Provider usage of an assistant turn'),
    createdAt: z.iso.datetime({ offset: true }).optional(),
    metadata: JsonObjectIn.optional(),
  })
  .strict()
  .superRefine((message, ctx) => {
    if (message.role !== 'assistant') {
      message.parts.forEach((part, i) => {
        if (part.type === 'tool' || part.type === 'reasoning') {
          ctx.addIssue({
            code: 'custom',
            message: `${part.type} parts belong to assistant messages`,
            path: ['parts', i],
          });
        }
      });
      if (message.usage)
        ctx.addIssue({ code: 'custom', message: 'usage belongs to assistant messages', path: ['usage'] });
    }
    const seen = new Set<string>();
    message.parts.forEach((part, i) => {
      if (part.type !== 'tool') return;
      if (seen.has(part.callId)) {
        ctx.addIssue({
          code: 'custom',
          message: `duplicate callId ${part.callId} in one message`,
          path: ['parts', i, 'callId'],
        });
      }
      seen.add(part.callId);
    });
  });
export type MessageInput = z.infer<typeof MessageIn>;

export const AppendMessagesBody = z
  .object({ messages: z.array(MessageIn).min(1).max(1000) })
  .strict()
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.messages.forEach((m, i) => {
      if (m.id === undefined) return;
      if (seen.has(m.id))
        ctx.addIssue({
          code: 'custom',
          message: `duplicate message id ${m.id} in one batch`,
          path: ['messages', i, 'id'],
        });
      seen.add(m.id);
    });
  });

export const PatchMessageBody = z
  .object({
    finish: z.enum(FINISH).nullable().optional(),
    error: MessageErrorIn.nullable().optional(),
    usage: UsageSchema.nullable().optional(),
    parts: z
      .array(PartIn)
      .max(5000)
      .optional()
      .describe('Tool parts are upserted by callId; other parts are appended'),
  })
  .strict();

export const MessageParams = z.object({ id: ClientId, messageId: ClientId });

export const HistoryQuery = z
  .object({
    afterSeq: z.coerce.number().int().min(0).max(INT4_MAX).default(0),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();

const PartOut = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string(), tokens: z.number() }),
  z.object({ type: z.literal('reasoning'), text: z.string(), tokens: z.number() }),
  z.object({
    type: z.literal('tool'),
    callId: z.string(),
    tool: z.string(),
    status: z.enum(TOOL_STATUS),
    input: z.unknown(),
    output: z.string().nullable(),
    error: z.string().nullable(),
    compactedAt: z.string().nullable().describe('Set when pruned; the output is still returned here'),
    tokens: z.number(),
    outputTokens: z.number(),
  }),
  z.object({
    type: z.literal('file'),
    mime: z.string(),
    filename: z.string().nullable(),
    url: z.string(),
    tokens: z.number(),
  }),
  z.object({ type: z.literal('compaction'), auto: z.boolean(), tokens: z.number() }),
]);

export const MessageOut = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    role: z.enum(['user', 'assistant', 'system']),
    parts: z.array(PartOut),
    finish: z.enum(FINISH).nullable(),
    error: z.object({ message: z.string(), code: z.string().optional() }).nullable(),
    usage: UsageSchema.nullable(),
    createdAt: z.string(),
    metadata: JsonObject,
    summary: z.boolean().describe('Written by a compaction'),
    compactionId: z.string().nullable(),
  })
  .meta({ id: 'Message' });

export const HistoryPage = z.object({
  messages: z.array(MessageOut),
  nextAfterSeq: z.number().int().nullable(),
});
