/** Messages and their parts: appended in batches, patched when a streamed turn finishes, read back. */
import { z } from 'zod';
import {
  ClientId,
  IdempotencyKey,
  INT4_MAX,
  Instant,
  JsonObject,
  JsonObjectIn,
  SafeJson,
  SafeText,
} from './primitives.js';
import { FINISH, ROLES, TOOL_STATUS, UsageSchema } from './vocabulary.js';
import { dataUrlProblem, isDataUrl, MEDIA_REFERENCE_REFUSAL } from './media.js';

/**
 * A tool's name as the providers accept one in a tool definition (letters, digits, `_`, `-`, and
 * the `.` and `:` some allow), at most 64 characters: a name with a line break or framing text
 * would be copied by the summarizer into the summary the next context serves.
 */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
/**
 * A tool call's id: 1 to 200 printable characters, no whitespace, control or invisible format
 * characters (no line break can start a line of framing in a summary that quotes it). Every
 * provider's ids are ASCII; a client's own may not be, and are kept as they are.
 */
export const CALL_ID_PATTERN = /^[^\s\p{C}]{1,200}$/u;

const ToolName = z
  .string()
  .regex(TOOL_NAME_PATTERN, 'a tool name is 1-64 letters, digits, `_`, `-`, `.` or `:` (as providers accept)')
  .describe('The tool: 1-64 of `A-Z a-z 0-9 _ - . :`, as the providers accept tool names');
const CallId = z
  .string()
  .regex(CALL_ID_PATTERN, 'a callId is 1-200 printable characters, without whitespace or control characters')
  .describe("The provider's id of the call: 1-200 printable characters, no whitespace or control characters");

const TextPartIn = z.object({ type: z.literal('text'), text: SafeText }).strict();
const ReasoningPartIn = z.object({ type: z.literal('reasoning'), text: SafeText }).strict();
const ToolPartIn = z
  .object({
    type: z.literal('tool'),
    callId: CallId,
    tool: ToolName,
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
    callId: CallId.optional().describe(
      "Set when the file is part of a tool call's result (an image a tool returned): that call's id. The tool part with this callId must be in the same parts list; renderings put the file in the call's result",
    ),
  })
  .strict()
  .superRefine((part, ctx) => {
    if (part.url.toLowerCase().startsWith('compactor-media:'))
      ctx.addIssue({ code: 'custom', message: MEDIA_REFERENCE_REFUSAL, path: ['url'] });
    if (!isDataUrl(part.url)) return;
    const problem = dataUrlProblem(part.url);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['url'] });
  });

/** A part as a client posts it: text, reasoning, a tool call with its result, or a file by URL. */
export const PartIn = z.discriminatedUnion('type', [TextPartIn, ReasoningPartIn, ToolPartIn, FilePartIn]);
/** A part as the API hands it on once validated (what @compactor/db stores). */
export type PartInput = z.output<typeof PartIn>;

/**
 * A file that belongs to a tool call's result names a call of the same parts list: the result
 * is written with its call (an append, or a PATCH that upserts the tool part), never alone.
 */
function checkResultFiles(parts: readonly PartInput[], ctx: z.RefinementCtx): void {
  const calls = new Set(parts.flatMap((part) => (part.type === 'tool' ? [part.callId] : [])));
  parts.forEach((part, i) => {
    if (part.type !== 'file' || part.callId === undefined || calls.has(part.callId)) return;
    ctx.addIssue({
      code: 'custom',
      message: `no tool part with callId ${part.callId} in these parts: a result's file is sent with its call`,
      path: ['parts', i, 'callId'],
    });
  });
}

/** A message's error: a plain string is shorthand for `{ message }`. */
const MessageErrorIn = z.union([
  SafeText.transform((message) => ({ message })),
  z.object({ message: SafeText, code: SafeText.optional() }).strict(),
]);

/** A message as a client posts it (tool and reasoning parts and usage only on assistant messages). */
export const MessageIn = z
  .object({
    id: ClientId.optional().describe('Client id: re-posting it with identical content is a no-op'),
    role: z.enum(ROLES),
    parts: z.array(PartIn).max(5000),
    finish: z.enum(FINISH).nullable().optional(),
    error: MessageErrorIn.nullable().optional(),
    usage: UsageSchema.nullable().optional().describe('Provider usage of an assistant turn'),
    createdAt: Instant.optional(),
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
    checkResultFiles(message.parts, ctx);
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
/** A message as the API hands it on once validated (what @compactor/db stores). */
export type MessageInput = z.output<typeof MessageIn>;
/** A message as a client writes it (before defaults and shorthands are applied). */
export type MessageRequest = z.input<typeof MessageIn>;

/** `POST /v1/sessions/:id/messages`: 1–1,000 messages, client ids unique within the batch. */
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
  })
  // zod leaves `examples` out of the input JSON Schema of a schema holding a transform (the error
  // shorthand), so the two message writes name theirs with @fastify/swagger's `x-examples`: they
  // become the request body's named `examples` in the OpenAPI document.
  .meta({
    'x-examples': {
      toolTurn: {
        summary: 'A user turn and the assistant tool call it led to',
        value: {
          messages: [
            { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Fix the failing test in src/app.ts' }] },
            {
              id: 'm2',
              role: 'assistant',
              parts: [
                {
                  type: 'tool',
                  callId: 'call_1',
                  tool: 'read',
                  status: 'completed',
                  input: { path: 'src/app.ts' },
                  output: 'export const answer = 41;',
                },
              ],
              finish: 'tool-calls',
              usage: { input: 1200, output: 40 },
            },
          ],
        },
      },
    },
  });
/** The body of an append, as a client writes it. */
export type AppendMessagesRequest = z.input<typeof AppendMessagesBody>;

/**
 * `Idempotency-Key` on an append: the messages sent without an id get ids derived from the key
 * (and the tenant, the session and their place in the batch), so the same batch sent again with
 * the same key is a re-post, stored once; the key with other messages is a 409.
 */
export const AppendIdempotencyHeaders = z.looseObject({
  'idempotency-key': IdempotencyKey.optional().describe(
    'Makes a retry safe for messages sent without an id: each gets an id derived from the key and its place in the batch, so the same key and batch again store nothing new (answered as a re-post); the key with other messages in those places is a 409. Messages with ids keep them',
  ),
});

/** `PATCH /v1/sessions/:id/messages/:messageId`: finish a streamed turn. */
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
  .strict()
  .superRefine((body, ctx) => {
    if (body.parts) checkResultFiles(body.parts, ctx);
  })
  .meta({
    'x-examples': {
      finishTurn: {
        summary: 'The streamed turn ended: its finish, usage and a tool result',
        value: {
          finish: 'stop',
          usage: { input: 1500, output: 220 },
          parts: [{ type: 'tool', callId: 'call_2', tool: 'bash', status: 'completed', output: '12 passed' }],
        },
      },
    },
  });
/** The body of a message PATCH, as a client writes it. */
export type PatchMessageRequest = z.input<typeof PatchMessageBody>;

/** `:id` and `:messageId` of the message PATCH. */
export const MessageParams = z.object({ id: ClientId, messageId: ClientId });

/** `GET /v1/sessions/:id/messages?afterSeq=&limit=`. */
export const HistoryQuery = z
  .object({
    afterSeq: z.coerce.number().int().min(0).max(INT4_MAX).default(0),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();
/** The history query as a client writes it (both fields optional). */
export type HistoryQueryInput = z.input<typeof HistoryQuery>;

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
    callId: z.string().optional().describe("Present when the file is part of that tool call's result"),
  }),
  z.object({ type: z.literal('compaction'), auto: z.boolean(), tokens: z.number() }),
]);
/** A stored part: the input plus its token counts (and, for tool parts, when it was pruned). */
export type StoredPart = z.output<typeof PartOut>;

const MessageFields = z.object({
  id: z.string(),
  seq: z.number().int(),
  role: z.enum(ROLES),
  parts: z.array(PartOut),
  finish: z.enum(FINISH).nullable(),
  error: z.object({ message: z.string(), code: z.string().optional() }).nullable(),
  usage: UsageSchema.nullable(),
  createdAt: z.string(),
  metadata: JsonObject,
  summary: z.boolean().describe('Written by a compaction'),
  compactionId: z.string().nullable(),
});

/** A stored message, as the history and the native context return it. */
export const messageExample: z.output<typeof MessageFields> = {
  id: 'm1',
  seq: 1,
  role: 'user',
  parts: [{ type: 'text', text: 'Fix the failing test in src/app.ts', tokens: 9 }],
  finish: null,
  error: null,
  usage: null,
  createdAt: '2026-01-05T10:00:00.000Z',
  metadata: {},
  summary: false,
  compactionId: null,
};

/** A stored message with its seq, counted parts and whether a compaction wrote it. */
export const MessageOut = MessageFields.meta({ id: 'Message', examples: [messageExample] });
/** A stored message as a client receives it. */
export type Message = z.output<typeof MessageOut>;

/** A page of the raw history (`GET …/messages`). */
export const HistoryPage = z
  .object({
    messages: z.array(MessageOut),
    nextAfterSeq: z
      .number()
      .int()
      .nullable()
      .describe('Pass as `afterSeq` for the next page; null on the last'),
  })
  .meta({ examples: [{ messages: [messageExample], nextAfterSeq: null }] });
/** A history page as a client receives it. */
export type HistoryPageResponse = z.output<typeof HistoryPage>;
