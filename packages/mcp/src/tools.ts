/**
 * The MCP tools, defined once for both transports: their names, the descriptions a model
 * decides by, their input schemas (the wire contract's id and text rules, so hostile input is
 * refused before it reaches a backend) and what each answers (text; recall_media an image).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  ClientId,
  MAX_INSTRUCTIONS_BYTES,
  MAX_RECALL_LIMIT,
  MAX_RECALL_QUERY_LENGTH,
  MEDIA_ID_PATTERN,
  SafeText,
  utf8ByteLength,
  type RecallMedia,
} from '@compactor/contract';
import { recallAnswerText } from '@compactor/client';
import { ToolRefusal, type McpBackend } from './backend';

export const MCP_SERVER_NAME = 'compactor';
export const MCP_SERVER_VERSION = '0.1.0';

export const TOOL_NAMES = [
  'recall',
  'recall_media',
  'search_history',
  'session_status',
  'compact_now',
  'revert_compaction',
] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

const sessionId = ClientId.describe(
  'The Compactor session id (the one your agent stores its conversation under)',
);

const RecallInput = {
  sessionId,
  callId: SafeText.min(1)
    .max(200)
    .describe(
      'The tool call id a cleared output names: `[Old tool result content cleared — recall <callId>]`',
    ),
};
const RecallMediaInput = {
  sessionId,
  mediaId: z
    .string()
    .regex(MEDIA_ID_PATTERN, '16 to 64 lowercase hex digits')
    .describe('The media id an `[Older image … media id <id>]` marker names'),
};
const SearchInput = {
  sessionId,
  query: SafeText.min(1)
    .max(MAX_RECALL_QUERY_LENGTH)
    .describe('Words to look for (all of them; "a phrase" in quotes; `or`; `-word` to exclude)'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_RECALL_LIMIT)
    .optional()
    .describe('How many passages at most (default 5)'),
};
const StatusInput = { sessionId };
const CompactInput = {
  sessionId,
  instructions: SafeText.refine((text) => utf8ByteLength(text) <= MAX_INSTRUCTIONS_BYTES, {
    message: `at most ${MAX_INSTRUCTIONS_BYTES} bytes (UTF-8)`,
  })
    .optional()
    .describe('What the summary must keep ("the API decisions", "the failing test names")'),
};
const RevertInput = {
  sessionId,
  compactionId: ClientId.describe('The compaction to undo: the latest completed one of the session'),
};

const DESCRIPTIONS: Record<ToolName, string> = {
  recall:
    'Get back, verbatim, the output of an earlier tool call that compaction cleared from your context. ' +
    'Use it when you see `[Old tool result content cleared — recall <callId>]` and need that output again: ' +
    'pass the callId the marker names.',
  recall_media:
    'See again an image (or document) that was left out of your context to save room. Use it when you ' +
    'see `[Older image … media id <id>]` and need to look at that image: pass the id the marker names.',
  search_history:
    'Search the part of this conversation you no longer see verbatim (summarized turns and cleared tool ' +
    'outputs). Returns the best matching passages with where they came from; a passage naming a call id ' +
    'can be read in full with recall.',
  session_status:
    'How full the session is: tokens in context, the usable window, percent used, whether it is over, ' +
    'and the active and last compaction. JSON.',
  compact_now:
    'Compact the session now: old tool outputs are cleared and older turns summarized, so the context ' +
    'shrinks. Runs in the background; session_status shows when it is done. Give instructions to say ' +
    'what the summary must keep. Returns the compaction (JSON); if one is already running, that one.',
  revert_compaction:
    'Undo a compaction: the context it replaced is served again (cleared outputs and summarized turns ' +
    'come back). Only the latest completed compaction of the session can be undone. Returns the reverted ' +
    'compaction and the new status (JSON).',
};

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /**
   * Told about a failure that is not a {@link ToolRefusal} (a fault of ours), so the transport's
   * owner can log it; the model is told only that the tool failed.
   */
  onUnexpectedError?: (error: unknown, tool: ToolName) => void;
}

/** An MCP server with the six tools over `backend`; connect it to a transport. */
export function createMcpServer(backend: McpBackend, options: McpServerOptions = {}): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION });
  // Each tool answers text (recall_media an image); a refusal is a tool error in its own words.
  const run = (tool: ToolName, answer: () => Promise<string>): Promise<CallToolResult> =>
    runContent(tool, async () => [{ type: 'text', text: await answer() }]);
  const runContent = async (
    tool: ToolName,
    answer: () => Promise<CallToolResult['content']>,
  ): Promise<CallToolResult> => {
    try {
      return { content: await answer() };
    } catch (error) {
      if (error instanceof ToolRefusal)
        return { content: [{ type: 'text', text: error.message }], isError: true };
      options.onUnexpectedError?.(error, tool);
      return {
        content: [{ type: 'text', text: `${tool} failed: internal error in Compactor` }],
        isError: true,
      };
    }
  };
  const readOnly = { readOnlyHint: true, openWorldHint: false };

  server.registerTool(
    'recall',
    { description: DESCRIPTIONS.recall, inputSchema: RecallInput, annotations: readOnly },
    ({ sessionId, callId }) =>
      run('recall', async () => {
        const call = await backend.recall(sessionId, callId);
        // Verbatim: what the tool returned (or the error it failed with), nothing around it.
        if (call.status === 'error') return call.error ?? '(the call failed with no error text)';
        return call.output ?? '(the call completed with no output)';
      }),
  );
  server.registerTool(
    'recall_media',
    { description: DESCRIPTIONS.recall_media, inputSchema: RecallMediaInput, annotations: readOnly },
    ({ sessionId, mediaId }) =>
      runContent('recall_media', async () => mediaContent(await backend.recallMedia(sessionId, mediaId))),
  );
  server.registerTool(
    'search_history',
    { description: DESCRIPTIONS.search_history, inputSchema: SearchInput, annotations: readOnly },
    ({ sessionId, query, limit }) =>
      // Worded as the clients word a recall tool call's search, for the model to read.
      run('search_history', async () => recallAnswerText(await backend.search(sessionId, query, limit))),
  );
  server.registerTool(
    'session_status',
    { description: DESCRIPTIONS.session_status, inputSchema: StatusInput, annotations: readOnly },
    ({ sessionId }) =>
      run('session_status', async () => {
        const session = await backend.session(sessionId);
        const { id, contextWindow, maxOutputTokens } = session.model;
        return json({
          sessionId: session.id,
          model: { id, contextWindow, maxOutputTokens },
          status: session.status,
        });
      }),
  );
  server.registerTool(
    'compact_now',
    {
      description: DESCRIPTIONS.compact_now,
      inputSchema: CompactInput,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    ({ sessionId, instructions }) =>
      run('compact_now', async () => json(await backend.compact(sessionId, instructions))),
  );
  server.registerTool(
    'revert_compaction',
    {
      description: DESCRIPTIONS.revert_compaction,
      inputSchema: RevertInput,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    ({ sessionId, compactionId }) =>
      run('revert_compaction', async () => {
        // The route reverts by compaction id alone: a compaction of another session is not this
        // session's, and is not found like a missing one.
        const compaction = await backend.compaction(compactionId);
        if (compaction.sessionId !== sessionId) throw new ToolRefusal('compaction not found');
        return json(await backend.revert(compactionId));
      }),
  );
  return server;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

/**
 * A recalled part as MCP content: an image as an image block after a line saying what it is;
 * any other file as an embedded resource with its bytes.
 */
function mediaContent(media: RecallMedia): CallToolResult['content'] {
  const comma = media.part.url.indexOf(',');
  const data = media.part.url.slice(comma + 1);
  const size = media.width !== null && media.height !== null ? `, ${media.width}×${media.height} px` : '';
  const call = media.callId === null ? '' : `, returned by tool call ${media.callId}`;
  const what = `${media.part.mime}${size}, ${media.bytes} bytes, message ${media.messageId}${call}`;
  const file: CallToolResult['content'][number] = media.part.mime.startsWith('image/')
    ? { type: 'image', data, mimeType: media.part.mime }
    : {
        type: 'resource',
        resource: { uri: `compactor-media:${media.mediaId}`, mimeType: media.part.mime, blob: data },
      };
  return [{ type: 'text', text: what }, file];
}
