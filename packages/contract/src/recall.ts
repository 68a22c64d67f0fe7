/**
 * `GET /v1/sessions/:id/recall`: what a compaction took out of the model's view, given back on
 * request. Nothing is deleted by compaction: a pruned output stays stored and the history before
 * the boundary stays in the raw history until retention purges it, so the agent can recall one
 * cleared output by its call id, or search what was summarized away and cleared.
 */
import { z } from 'zod';
import { SafeText } from './primitives.js';
import { ROLES } from './vocabulary.js';
import {
  DEFAULT_RECALL_LEDGER_LIMIT,
  ledgerCursorOffset,
  MAX_RECALL_LEDGER_LIMIT,
  RECALL_LEDGER_KINDS,
  RecallLedger,
  recallLedgerExample,
} from './recall-ledger.js';

/** A media id as markers name it: the first 16 (or more) hex digits of the bytes' SHA-256. */
export const MEDIA_ID_PATTERN = /^[0-9a-f]{16,64}$/;

/** The longest search query, in UTF-16 units. */
export const MAX_RECALL_QUERY_LENGTH = 500;
/** The most passages one search returns; and how many when `limit` is left out. */
export const MAX_RECALL_LIMIT = 20;
export const DEFAULT_RECALL_LIMIT = 5;
/** The longest excerpt of a search result, in characters (code points). */
export const MAX_RECALL_EXCERPT_LENGTH = 1_000;

/** What marks a cleared tool output in the model's view: the call id names what to recall. */
export function clearedOutputMarker(callId: string): string {
  return `[Old tool result content cleared — recall ${callId}]`;
}

/**
 * `?callId=` (one cleared output), `?q=&limit=` (a search), `?kind=&limit=&cursor=` (a section of
 * the artifact ledger) or `?mediaId=` (an image a media marker replaced): exactly one of them.
 */
export const RecallQuery = z
  .object({
    callId: SafeText.min(1).max(200).optional().describe('The call named by a cleared marker'),
    q: SafeText.min(1)
      .max(MAX_RECALL_QUERY_LENGTH)
      .optional()
      .describe('Words to find in the history the model no longer sees verbatim'),
    kind: z
      .enum(RECALL_LEDGER_KINDS)
      .optional()
      .describe('A section of the artifact ledger to list whole: files, commands or facts'),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(MAX_RECALL_LEDGER_LIMIT)
      .optional()
      .describe(
        `With q: passages to return (default ${DEFAULT_RECALL_LIMIT}, at most ${MAX_RECALL_LIMIT}); ` +
          `with kind: entries per page (default ${DEFAULT_RECALL_LEDGER_LIMIT})`,
      ),
    mediaId: z
      .string()
      .regex(MEDIA_ID_PATTERN, 'a media id is 16 to 64 lowercase hex digits (what a media marker names)')
      .optional()
      .describe('The media id an `[Older image … media id <id>]` marker names: the image comes back whole'),
    cursor: SafeText.min(1)
      .max(20)
      .optional()
      .describe('With kind only: the `nextCursor` of the previous page'),
  })
  .strict()
  .superRefine((query, ctx) => {
    const given = [query.callId, query.q, query.kind, query.mediaId].filter((v) => v !== undefined).length;
    if (given !== 1) {
      const message = 'give exactly one of callId, q, kind and mediaId';
      ctx.addIssue({ code: 'custom', message, path: ['callId'] });
    }
    if ((query.callId !== undefined || query.mediaId !== undefined) && query.limit !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'limit applies to q and kind only', path: ['limit'] });
    }
    if (query.q !== undefined && query.limit !== undefined && query.limit > MAX_RECALL_LIMIT) {
      ctx.addIssue({
        code: 'custom',
        message: `with q, limit is at most ${MAX_RECALL_LIMIT}`,
        path: ['limit'],
      });
    }
    if (query.cursor !== undefined && query.kind === undefined) {
      ctx.addIssue({ code: 'custom', message: 'cursor applies to kind only', path: ['cursor'] });
    }
    if (query.cursor !== undefined && ledgerCursorOffset(query.cursor) === null) {
      ctx.addIssue({ code: 'custom', message: 'not a cursor this API wrote', path: ['cursor'] });
    }
  });
/** The recall query as a client writes it. */
export type RecallQueryInput = z.input<typeof RecallQuery>;

const RecallOutputFields = z.object({
  kind: z.literal('call'),
  callId: z.string(),
  tool: z.string(),
  status: z.enum(['completed', 'error']),
  output: z.string().nullable(),
  error: z.string().nullable(),
  messageId: z.string().describe('The assistant message holding the call'),
  seq: z.number().int(),
  tokens: z.number().int().describe("The output's stored token count"),
  prunedAt: z.string().nullable().describe('When a compaction cleared it; null if it was never cleared'),
});

const recallOutputExample: z.output<typeof RecallOutputFields> = {
  kind: 'call',
  callId: 'call_2',
  tool: 'bash',
  status: 'completed',
  output: '412 passed, 3 failed\nFAIL test/parser.test.ts > nested quotes',
  error: null,
  messageId: 'm_7',
  seq: 7,
  tokens: 23,
  prunedAt: '2026-01-05T10:12:00.000Z',
};

/** One tool call's original output, as stored before any compaction cleared it. */
export const RecallOutput = RecallOutputFields.meta({ id: 'RecallOutput', examples: [recallOutputExample] });
/** A recalled output as a client receives it. */
export type RecallOutput = z.output<typeof RecallOutput>;

const RecallHitFields = z.object({
  messageId: z.string(),
  seq: z.number().int(),
  role: z.enum(ROLES),
  source: z
    .enum(['summarized', 'cleared'])
    .describe('summarized: a message before the boundary; cleared: a pruned tool output'),
  callId: z.string().nullable().describe('The call whose output matched (source cleared, or a tool part)'),
  tool: z.string().nullable(),
  excerpt: z.string().describe(`At most ${MAX_RECALL_EXCERPT_LENGTH} characters around the match`),
  rank: z.number().describe('Higher is a better match'),
});
/** One passage a recall search found. */
export type RecallHit = z.output<typeof RecallHitFields>;

const RecallSearchFields = z.object({
  kind: z.literal('search'),
  query: z.string(),
  results: z.array(RecallHitFields).describe('Best first, at most `limit`'),
});

const recallSearchExample: z.output<typeof RecallSearchFields> = {
  kind: 'search',
  query: 'parser failure',
  results: [
    {
      messageId: 'm_7',
      seq: 7,
      role: 'assistant',
      source: 'cleared',
      callId: 'call_2',
      tool: 'bash',
      excerpt: 'FAIL test/parser.test.ts > nested quotes: the parser failure is in unquote()',
      rank: 0.61,
    },
  ],
};

/** The passages of the history the model no longer sees that match a query, best first. */
export const RecallSearch = RecallSearchFields.meta({ id: 'RecallSearch', examples: [recallSearchExample] });
/** A recall search as a client receives it. */
export type RecallSearch = z.output<typeof RecallSearch>;

const RecallMediaFields = z.object({
  kind: z.literal('media'),
  mediaId: z.string().describe('The full SHA-256 of the bytes (the marker names its first 16 hex digits)'),
  messageId: z.string().describe('The message holding the part (the newest, when several do)'),
  seq: z.number().int(),
  callId: z.string().nullable().describe('The tool call whose result the file is, if it is one'),
  part: z
    .object({
      type: z.literal('file'),
      mime: z.string(),
      filename: z.string().nullable(),
      url: z.string().describe('The original bytes as a `data:` URL'),
    })
    .describe('The part as it was posted'),
  bytes: z.number().int(),
  width: z.number().int().nullable(),
  height: z.number().int().nullable(),
  tokens: z.number().int().describe("The part's stored token count"),
});

const recallMediaExample: z.output<typeof RecallMediaFields> = {
  kind: 'media',
  mediaId: '9f2c4e1b7a3d5c60e8f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7',
  messageId: 'm_12',
  seq: 12,
  callId: 'toolu_01',
  part: { type: 'file', mime: 'image/png', filename: null, url: 'data:image/png;base64,iVBORw0KGgo…' },
  bytes: 48213,
  width: 1280,
  height: 800,
  tokens: 1365,
};

/** One image or document a media marker replaced, given back whole. */
export const RecallMedia = RecallMediaFields.meta({ id: 'RecallMedia', examples: [recallMediaExample] });
/** A recalled media part as a client receives it. */
export type RecallMedia = z.output<typeof RecallMedia>;

/** Any answer of the recall route, told apart by `kind`. */
export const RecallResponse = z
  .discriminatedUnion('kind', [RecallOutput, RecallSearch, RecallLedger, RecallMedia])
  .meta({
    id: 'RecallResponse',
    examples: [recallOutputExample, recallSearchExample, recallLedgerExample, recallMediaExample],
  });
/** A recall answer as a client receives it. */
export type RecallResponse = z.output<typeof RecallResponse>;
