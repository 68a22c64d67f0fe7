/**
 * The `recall` tool a model is offered with its context (`GET …/context?format=openai&tools=recall`):
 * one definition, served by the API and read by the clients that execute the model's calls.
 */
import { z } from 'zod';
import {
  clearedOutputMarker,
  DEFAULT_RECALL_LIMIT,
  MAX_RECALL_LIMIT,
  MAX_RECALL_QUERY_LENGTH,
  MEDIA_ID_PATTERN,
} from './recall.js';
import { RECALL_LEDGER_KINDS } from './recall-ledger.js';

/** The tools a context can be served with, by name. */
export const CONTEXT_TOOL_NAMES = ['recall'] as const;
/** A tool a context can be served with. */
export type ContextToolName = (typeof CONTEXT_TOOL_NAMES)[number];

/** The recall tool's name, as the model calls it. */
export const RECALL_TOOL_NAME = 'recall' satisfies ContextToolName;

/** The longest call id the recall route takes (a call id names a stored tool part). */
const MAX_CALL_ID_LENGTH = 200;

/** A Chat Completions `tools` entry, spelled as the OpenAI SDK's `ChatCompletionTool`. */
export const OpenAIToolOut = z
  .object({
    type: z.literal('function'),
    function: z.object({
      name: z.string(),
      description: z.string(),
      parameters: z.record(z.string(), z.unknown()).describe('JSON Schema of the arguments object'),
    }),
  })
  .meta({ id: 'OpenAITool' });
/** A Chat Completions tool definition (assignable to the OpenAI SDK's `ChatCompletionTool`). */
export type OpenAITool = z.output<typeof OpenAIToolOut>;

/**
 * The recall tool as the model sees it. The description names the marker a cleared output shows,
 * since that marker is where the model finds the call id to ask for.
 */
export const RECALL_TOOL: OpenAITool = {
  type: 'function',
  function: {
    name: RECALL_TOOL_NAME,
    description:
      'Recall what was taken out of your context to keep it within the window. A tool output shown ' +
      `as "${clearedOutputMarker('<callId>')}" is given back whole by its callId. ` +
      'Earlier conversation that was summarized, and cleared outputs, can be searched by words with ' +
      'query (a file path or a command finds the calls whose arguments named it): the best matching ' +
      'passages come back. kind lists what the session touched, whole, newest first: "files" (read, ' +
      'modified, created, deleted), "commands" (with how each last ended, and the errors still open) ' +
      'or "facts" (what the user stated, and the constraints the summary had no room for); the ' +
      'summary names the count it left out with recall?kind=…. An image shown as "[Older image … media ' +
      'id <id>]" is given back by its mediaId. Give exactly one of callId, query, kind and mediaId.',
    parameters: {
      type: 'object',
      properties: {
        callId: {
          type: 'string',
          description: 'The call id a cleared tool output names: returns that output whole',
          minLength: 1,
          maxLength: MAX_CALL_ID_LENGTH,
        },
        query: {
          type: 'string',
          description: 'Words to look for in the history no longer in your context',
          minLength: 1,
          maxLength: MAX_RECALL_QUERY_LENGTH,
        },
        kind: {
          type: 'string',
          enum: [...RECALL_LEDGER_KINDS],
          description: 'A section of what the session touched, listed whole',
        },
        limit: {
          type: 'integer',
          description: `With query: how many passages to return (default ${DEFAULT_RECALL_LIMIT})`,
          minimum: 1,
          maximum: MAX_RECALL_LIMIT,
        },
        mediaId: {
          type: 'string',
          description: "The media id an older image's marker names: returns that image",
          pattern: MEDIA_ID_PATTERN.source,
        },
      },
      additionalProperties: false,
    },
  },
};

/**
 * The arguments of a recall call as a model writes them: exactly one of `callId`, `query`, `kind`
 * and `mediaId`, `limit` with `query` only. A model's call breaking these rules gets a tool message that says so.
 */
export const RecallToolArguments = z
  .object({
    callId: z.string().min(1).max(MAX_CALL_ID_LENGTH).optional(),
    query: z.string().min(1).max(MAX_RECALL_QUERY_LENGTH).optional(),
    kind: z.enum(RECALL_LEDGER_KINDS).optional(),
    limit: z.number().int().min(1).max(MAX_RECALL_LIMIT).optional(),
    mediaId: z.string().regex(MEDIA_ID_PATTERN).optional(),
  })
  .strict()
  .superRefine((args, ctx) => {
    const given = [args.callId, args.query, args.kind, args.mediaId].filter((v) => v !== undefined).length;
    if (given !== 1) {
      const message = 'give exactly one of callId, query, kind and mediaId';
      ctx.addIssue({ code: 'custom', message, path: ['callId'] });
    }
    if (args.query === undefined && args.limit !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'limit applies to query only', path: ['limit'] });
    }
  });
/** The arguments of a recall call, parsed. */
export type RecallToolArguments = z.output<typeof RecallToolArguments>;

/** The tool message that answers a model's tool call in a Chat Completions `messages` array. */
export interface OpenAIToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}
