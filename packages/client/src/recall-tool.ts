/**
 * Executing the model's `recall` tool calls (the tool `GET …/context?tools=recall` offers): the
 * call's arguments become a recall request, its answer the text of the tool message. What a model
 * can get wrong (arguments, an unknown or purged call id) is said in that text, for the model to
 * read and do better; what the caller got wrong (another tool, a missing session) throws.
 *
 * The Python client (`clients/python`, `recall_tool.py`) writes the same texts.
 */
import {
  RECALL_TOOL_NAME,
  RecallToolArguments,
  type OpenAIToolMessage,
  type RecallHit,
  type RecallLedger,
  type RecallLedgerKind,
  type RecallOutput,
  type RecallResponse,
  type RecallSearch,
} from '@compactor/contract';
import { CompactorApiError } from './errors.js';

/** A Chat Completions tool call, as a model's answer holds it (the OpenAI SDK's type fits). */
export interface ToolCallLike {
  id: string;
  function: { name: string; arguments: string };
}

/**
 * A recall request: one cleared output by call id, a search (`limit` 1–20, default 5), a
 * section of the artifact ledger (`limit` 1–500, default 100; `cursor` a page's `nextCursor`), or
 * an image a media marker replaced, by its media id.
 */
export type RecallRequest =
  | { callId: string; q?: undefined; kind?: undefined; mediaId?: undefined }
  | { q: string; limit?: number; callId?: undefined; kind?: undefined; mediaId?: undefined }
  | {
      kind: RecallLedgerKind;
      limit?: number;
      cursor?: string;
      callId?: undefined;
      q?: undefined;
      mediaId?: undefined;
    }
  | { mediaId: string; callId?: undefined; q?: undefined; kind?: undefined };

/** What the model is told when its arguments cannot be a recall request. */
export const INVALID_RECALL_ARGUMENTS =
  'recall was not run: its arguments must be {"callId": "<the call id a cleared output names>"}, ' +
  '{"query": "<words to look for>", "limit": <1 to 20, optional>} ' +
  'or {"kind": "files" | "commands" | "facts"}.';

/** The recall request a call's arguments make, or null when they make none. */
export function recallQueryOf(argumentsJson: string): RecallRequest | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsJson === '' ? '{}' : argumentsJson);
  } catch {
    return null;
  }
  const args = RecallToolArguments.safeParse(parsed);
  if (!args.success) return null;
  const { callId, query, kind, limit, mediaId } = args.data;
  if (callId !== undefined) return { callId };
  if (mediaId !== undefined) return { mediaId };
  if (kind !== undefined) return { kind };
  if (query === undefined) return null;
  return limit === undefined ? { q: query } : { q: query, limit };
}

/** The tool message's text for an answer of the recall route. */
export function recallAnswerText(answer: RecallResponse): string {
  if (answer.kind === 'ledger') return ledgerText(answer);
  // A tool message holds text: the image itself is for a client that sends it as a user part.
  if (answer.kind === 'media')
    return `media ${answer.mediaId.slice(0, 16)}: ${answer.part.mime}, ${answer.bytes} bytes, message ${answer.messageId}`;
  return answer.kind === 'call' ? callText(answer) : searchText(answer);
}

/** One entry of a ledger section as a line: the path, command or fact, then what is known of it. */
function ledgerEntryLine(entry: RecallLedger['entries'][number]): string {
  if ('path' in entry) return `- ${entry.path} (${entry.kind})`;
  if ('command' in entry) {
    const exit = entry.exitCode === undefined ? '' : `, exit code ${entry.exitCode}`;
    return `- ${entry.command} (${entry.outcome}${exit})`;
  }
  return `- ${entry.text} (${entry.kind})`;
}

function ledgerText(answer: RecallLedger): string {
  const lines = [
    `${answer.total} ${answer.section} in what this session touched, newest first` +
      (answer.entries.length < answer.total ? ` (${answer.entries.length} shown):` : ':'),
    ...answer.entries.map(ledgerEntryLine),
  ];
  if (answer.openErrors && answer.openErrors.length > 0) {
    lines.push('Open errors (failed, not passed since):', ...answer.openErrors.map((e) => `- ${e.command}`));
  }
  if (answer.unlistedConstraints && answer.unlistedConstraints.length > 0) {
    lines.push(
      'Constraints the summary had no room for:',
      ...answer.unlistedConstraints.map((constraint) => `- ${constraint}`),
    );
  }
  return lines.join('\n');
}

function callText(answer: RecallOutput): string {
  const call = `Tool call "${answer.callId}" (${answer.tool})`;
  if (answer.status === 'error') return `${call} failed:\n${answer.error ?? '(no error text)'}`;
  return answer.output === null ? `${call} completed with no output.` : `${call} output:\n${answer.output}`;
}

function searchText(answer: RecallSearch): string {
  if (answer.results.length === 0) {
    return `Nothing found for "${answer.query}" in the history outside your context.`;
  }
  const head = `Found ${answer.results.length} passage(s) for "${answer.query}" in the history outside your context, best first:`;
  return [head, ...answer.results.map((hit, i) => `${hitLabel(hit, i)}\n${hit.excerpt}`)].join('\n\n');
}

function hitLabel(hit: RecallHit, index: number): string {
  const what = hit.source === 'cleared' ? 'cleared output' : 'summarized';
  const call = hit.callId === null ? '' : `, ${hit.tool ?? 'tool'} call "${hit.callId}"`;
  return `[${index + 1}] seq ${hit.seq}, ${hit.role}, ${what}${call}:`;
}

/**
 * The text for a recall the API refused because of the model's arguments, or null when the
 * refusal is not the model's doing (it is thrown then).
 */
export function recallRefusalText(query: RecallRequest, error: unknown): string | null {
  if (!(error instanceof CompactorApiError)) return null;
  if (error.status === 400 && error.code === 'validation_error') return INVALID_RECALL_ARGUMENTS;
  if (query.mediaId !== undefined) return error.status === 404 ? mediaNotFoundText(query.mediaId) : null;
  // A search or a ledger section cannot miss but for the session itself, which the caller named:
  // not the model's doing.
  if (query.callId === undefined) return null;
  if (error.status === 404) {
    return `No tool call "${query.callId}" is stored in this session: use the call id a cleared output's marker names.`;
  }
  if (error.status === 410) {
    return `The output of tool call "${query.callId}" is no longer stored: retention has removed it.`;
  }
  return null;
}

/** What the model is told when no stored part holds the image its media id names. */
export function mediaNotFoundText(mediaId: string): string {
  return `No image with media id "${mediaId}" is stored in this session: use the media id an older image's marker names.`;
}

/** Runs one recall tool call with `recall` (the client's method) and returns its tool message. */
export async function executeRecallToolCall(
  recall: (query: RecallRequest) => Promise<RecallResponse>,
  toolCall: ToolCallLike,
): Promise<OpenAIToolMessage> {
  if (toolCall.function.name !== RECALL_TOOL_NAME) {
    throw new TypeError(`executeRecallToolCall: "${toolCall.function.name}" is not the recall tool`);
  }
  const message = (content: string): OpenAIToolMessage => ({
    role: 'tool',
    tool_call_id: toolCall.id,
    content,
  });
  const query = recallQueryOf(toolCall.function.arguments);
  if (query === null) return message(INVALID_RECALL_ARGUMENTS);
  try {
    return message(recallAnswerText(await recall(query)));
  } catch (error) {
    const refusal = recallRefusalText(query, error);
    if (refusal === null) throw error;
    return message(refusal);
  }
}
