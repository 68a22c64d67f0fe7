/**
 * The "Messages and parts" section of docs/API.md: every message and part field (as posted and
 * as stored), the tool statuses, and how each part reads in the context, native and OpenAI.
 *
 * The fields are read from @compactor/contract's schemas and the rendered texts from
 * @compactor/core, so the page cannot drift from them: a field added to a schema without a line
 * here fails `npm run docs:api` (and so the staleness test of generate-api-docs.test.ts).
 */
import { z } from 'zod';
import { MessageIn, MessageOut, PartIn, TOOL_STATUS } from '@compactor/contract';
import { COMPACTION_MARKER_TEXT, INTERRUPTED_TOOL_RESULT, prunedOutputMarker } from '@compactor/core';

type TypeOf = (schema: Record<string, unknown>) => string;

/** What each field means, by `<part type>.<field>` (`message.<field>` for the message itself). */
const FIELD_NOTES: Record<string, string> = {
  'message.id': 'Client id (at most 200 characters): re-posting it with identical content is a no-op',
  'message.role': 'There is no `tool` role: tool results live on the assistant’s tool parts',
  'message.parts': 'In the order the model produced them (at most 5,000)',
  'message.finish': 'Why an assistant turn ended; null or absent while it streams (see PATCH)',
  'message.error': 'A provider error of the turn: `{ message, code? }`, or a plain string for `{ message }`',
  'message.usage':
    'Provider usage of the turn (assistant only): calibrates the status estimate; see [Usage](#usage) for each provider’s fields',
  'message.createdAt': 'When the message was written (default: the time of the append)',
  'message.metadata': 'Your own JSON object, stored and returned as is',
  'message.seq': 'Position in the session, from 1',
  'message.summary': 'Written by a compaction',
  'message.compactionId': 'The compaction that wrote it, if one did',
  'text.type': '`text`',
  'text.text': 'The text (any role)',
  'reasoning.type': '`reasoning` (assistant only)',
  'reasoning.text': 'The model’s reasoning: stored and counted, never sent back in `format=openai`',
  'tool.type': '`tool` (assistant only): one call and its result',
  'tool.callId': 'The call’s id, unique in its message; a PATCH upserts the part by it',
  'tool.tool': 'The tool’s name',
  'tool.status': 'The call’s lifecycle, see [Tool statuses](#tool-statuses)',
  'tool.input': 'The arguments: any JSON value (an object, or JSON text of one, is sent as is)',
  'tool.output': 'The result; required (a string, possibly empty) when `completed`',
  'tool.error': 'The failure; required when `error`',
  'tool.compactedAt': 'When the output was pruned; the history still returns the output',
  'tool.outputTokens': 'Tokens of the output alone',
  'file.type': '`file`: an attachment by URL (any role)',
  'file.mime': 'Its media type: `image/*` is sent to the model as an image',
  'file.filename': 'Its name, shown in the note that stands for a non-image file',
  'file.url': 'Where the model gets it: passed on as is',
  'file.callId':
    'Set when the file is part of a tool call’s result (an image a tool returned): the call’s id, whose tool part must be in the same parts list. Anthropic renders it inside that call’s `tool_result`, `format=openai` as a user message of images after the step’s tool messages',
  'compaction.type':
    '`compaction` (stored only): the request marker a compaction writes before an `opencode`-style summary',
  'compaction.auto': 'Whether the compaction that wrote it was started automatically',
};
const TOKENS_NOTE = 'Token count of the part as the context shows it';

const shapeOf = (schema: z.ZodType) => (schema as unknown as z.ZodObject).shape;
const partType = (shape: z.ZodRawShape) => String((shape['type'] as z.ZodLiteral).value);

function note(key: string): string {
  if (key.endsWith('.tokens')) return TOKENS_NOTE;
  const text = FIELD_NOTES[key];
  if (text === undefined)
    throw new Error(`docs: no note for the field ${key} (scripts/api-docs-messages.ts)`);
  return text;
}

/** A field's type as the page's tables write it, table-safe. */
function typeCell(schema: z.ZodType, io: 'input' | 'output', typeOf: TypeOf): string {
  const type = typeOf(z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>);
  return type
    .replace('#/$defs/', '')
    .replace(` ${Number.MIN_SAFE_INTEGER}…${Number.MAX_SAFE_INTEGER}`, '')
    .replace(/\|/g, '\\|');
}

/** One table row per field: as posted (`required`), and the fields only the stored form has. */
export function fieldRows(
  owner: string,
  posted: z.ZodRawShape | undefined,
  stored: z.ZodRawShape,
  typeOf: TypeOf,
): string[] {
  const rows: string[] = [];
  for (const [name, schema] of Object.entries(posted ?? {})) {
    const required = !(schema as z.ZodType).safeParse(undefined).success;
    rows.push(
      `| \`${owner}\` | \`${name}\` | ${typeCell(schema as z.ZodType, 'input', typeOf)} | ${required ? 'yes' : ''} | ${note(`${owner}.${name}`)} |`,
    );
  }
  for (const [name, schema] of Object.entries(stored)) {
    if (posted && name in posted) continue;
    rows.push(
      `| \`${owner}\` | \`${name}\` | ${typeCell(schema as z.ZodType, 'output', typeOf)} | stored | ${note(`${owner}.${name}`)} |`,
    );
  }
  return rows;
}

/** The section's lines (markdown, formatted later with the rest of the page). */
export function messagesSection(typeOf: TypeOf): string[] {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const postedParts = new Map(PartIn.options.map((option) => [partType(shapeOf(option)), shapeOf(option)]));
  const storedParts = (MessageOut.shape.parts.element as unknown as { options: z.ZodObject[] }).options;
  const messageFields = fieldRows('message', shapeOf(MessageIn), MessageOut.shape, typeOf).map((row) =>
    row.replace('| `message` ', '| message '),
  );
  const partFields = storedParts.flatMap((stored) =>
    fieldRows(partType(stored.shape), postedParts.get(partType(stored.shape)), stored.shape, typeOf),
  );
  const statuses: Record<(typeof TOOL_STATUS)[number], [string, string, string]> = {
    pending: [
      'Announced, not started',
      `shown as \`status: "error"\` with \`error: "${INTERRUPTED_TOOL_RESULT}"\``,
      `a \`tool\` message \`${INTERRUPTED_TOOL_RESULT}\``,
    ],
    running: [
      'Started, no result yet',
      `shown as \`status: "error"\` with \`error: "${INTERRUPTED_TOOL_RESULT}"\``,
      `a \`tool\` message \`${INTERRUPTED_TOOL_RESULT}\``,
    ],
    completed: [
      'Finished with `output`',
      // The marker names the call: `GET …/recall?callId=` returns the output it replaces.
      `as stored; once pruned (\`compactedAt\` set) \`output\` reads \`${prunedOutputMarker('<callId>')}\` (\`GET …/recall?callId=\` returns the output)`,
      `a \`tool\` message with the output, \`(no output)\` when empty, \`${prunedOutputMarker('<callId>')}\` once pruned`,
    ],
    error: ['Failed with `error`', 'as stored', 'a `tool` message with the error text'],
  };
  return [
    '## Messages and parts',
    '',
    'A message is a `role` and its `parts`, in order. Appended with `POST …/messages`, finished with',
    '`PATCH …/messages/{messageId}`; the history (`GET …/messages`) and the native context return the',
    'stored form, which adds the fields marked _stored_.',
    '',
    '| | field | type | required | |',
    '| --- | --- | --- | --- | --- |',
    ...messageFields,
    '',
    '### Part types',
    '',
    '| part | field | type | required | |',
    '| --- | --- | --- | --- | --- |',
    ...partFields,
    '',
    'Tool and reasoning parts belong to assistant messages (a 400 elsewhere); `callId` is unique in',
    'its message.',
    '',
    '### Tool statuses',
    '',
    'A call moves forward only: `pending → running → completed | error` (a PATCH that moves it back',
    'is a 409). The model always gets a result for every call, since providers reject a call without',
    'one: an unfinished call reads as interrupted.',
    '',
    '| status | meaning | in the native context | in `format=openai` |',
    '| --- | --- | --- | --- |',
    ...TOOL_STATUS.map(
      (status) => `| \`${status}\` | ${statuses[status].map((text) => cell(text)).join(' | ')} |`,
    ),
    '',
    '### How parts read in the context',
    '',
    '`format=native` returns the stored messages as the model sees them (tool parts rendered as above,',
    'oversized parts clamped after a compaction, see the context route). `format=openai` returns a',
    'Chat Completions `messages` array, ready to send:',
    '',
    '| part | `format=openai` |',
    '| --- | --- |',
    '| `text` | `content` of its message; a message’s texts are joined by a blank line |',
    '| `reasoning` | left out |',
    '| `tool` | an assistant message’s `tool_calls` entry (`id`: the `callId` made valid and unique, `function.name`: the tool name reduced to `[a-zA-Z0-9_-]`, at most 64 characters, `function.arguments`: JSON text of an object, a non-object input wrapped as `{"input": …}`), then a `tool` message with its result (`tool_call_id`, `content`) |',
    '| `file` | in a user message, an `image/*` file is an `image_url` content part; any other file (and any file of another role) is the text `[Attached file: <filename or unnamed> (<mime>)]` |',
    `| \`compaction\` | the text \`${cell(COMPACTION_MARKER_TEXT)}\` |`,
    '',
    'System messages stay `system` (text only), user messages are `user` (`content` a string, or',
    'content parts when they carry an image). An assistant message holds a whole agent turn, so it',
    'is split at each text that follows tool calls: `assistant (content, tool_calls) → tool … →',
    'assistant …`; `content` is null for a step that only calls tools. Messages with nothing to say',
    'are left out. The `OpenAIMessage` schema (`GET /openapi.json`) is assignable to the OpenAI',
    'SDK’s `ChatCompletionMessageParam`:',
    '',
    '| role | fields |',
    '| --- | --- |',
    '| `system` | `content`: string |',
    '| `user` | `content`: string \\| (`{ type: "text", text }` \\| `{ type: "image_url", image_url: { url } }`)[] |',
    '| `assistant` | `content`: string \\| null, `tool_calls`?: `{ id, type: "function", function: { name, arguments } }`[] |',
    '| `tool` | `tool_call_id`: string, `content`: string |',
    '',
  ];
}
