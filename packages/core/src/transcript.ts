/**
 * Messages serialised as a plain-text transcript for the summarizer (Opal, klaude-code, pi).
 *
 * The transcript is data for the summarizer, not a conversation: every block is labelled
 * (`[User]:`, `[Assistant]:`, `[Tool result]:` …) and the prompt wraps it in `<conversation>`
 * tags. Only the serializer starts a line with `[` or `<`: every piece of content is escaped
 * where it lands (prompt-data.ts), so no message can forge a block or close the wrapper. Tool
 * outputs are bounded so the summarizer request itself does not overflow.
 */
import {
  assertNever,
  INTERRUPTED_TOOL_RESULT,
  prunedOutputMarker,
  type Message,
  type Part,
  type Role,
  type ToolPart,
} from './model';
import { toolCallArguments } from './openai-format';
import { DEFAULT_POLICY } from './policy';
import { escapePromptData } from './prompt-data';

/** Limits of {@link serializeTranscript}; the caps keep the summarizer request itself from overflowing. */
export interface TranscriptOptions {
  /** Default: the default policy's `summarizer.toolResultMaxChars` (2,000, as klaude-code and pi). */
  toolResultMaxChars?: number;
  /** Default: the default policy's `summarizer.toolArgsMaxChars` (1,000: an `Edit`'s old/new strings say what changed). */
  toolArgsMaxChars?: number;
  /** Include reasoning parts as `[Assistant thinking]:` blocks (off: they are long and rarely needed). */
  includeReasoning?: boolean;
}

const ROLE_LABELS: Record<Role, string> = { user: 'User', assistant: 'Assistant', system: 'System' };

/** `text` cut to `maxChars`, with a marker saying how much was dropped. */
export function truncateForTranscript(text: string, maxChars: number): string {
  return boundedContent(text, maxChars, (kept) => kept);
}

/**
 * Content written after a label on the same line, escaped (prompt-data.ts) and, when `maxChars`
 * is given, cut to it. The marker of a cut is the serializer's own line: it is added after the
 * escaping, so it stays a bare `[…]` line.
 */
function inlineContent(text: string, maxChars = Number.POSITIVE_INFINITY): string {
  return boundedContent(text, maxChars, (kept) => escapePromptData(kept, 'inline'));
}

function boundedContent(text: string, maxChars: number, quote: (kept: string) => string): string {
  if (text.length <= maxChars) return quote(text);
  const dropped = text.length - maxChars;
  return `${quote(text.slice(0, Math.max(0, maxChars)))}\n[... ${dropped} more character${dropped === 1 ? '' : 's'} truncated]`;
}

function toolResultLine(part: ToolPart, maxChars: number): string {
  switch (part.status) {
    case 'completed':
      // Pruning only ever clears completed outputs; an error stays visible whatever its mark says
      // (as in the OpenAI rendering).
      // The marker embeds the client's call id, data like any content: escaped as such.
      if (part.compactedAt !== null)
        return `[Tool result]: ${inlineContent(prunedOutputMarker(part.callId))}`;
      return `[Tool result]: ${inlineContent(part.output ?? '', maxChars)}`;
    case 'error':
      return `[Tool error]: ${inlineContent(part.error ?? 'unknown error', maxChars)}`;
    case 'pending':
    case 'running':
      return `[Tool result]: ${INTERRUPTED_TOOL_RESULT}`;
    default:
      return assertNever(part.status, 'tool status');
  }
}

/** How an unnamed file is named: its URL when it is a link, never a data: URL or a stored reference. */
function fileDescription(url: string, mime: string): string {
  if (/^(?:data|compactor-media):/i.test(url))
    return mime.startsWith('image/') ? 'unnamed image' : 'unnamed file';
  return url.slice(0, 100);
}

/**
 * The tool that produced a file part: the call whose result it is (`callId`), else the call
 * right before it in its message (a screenshot tool's image).
 */
function producingTool(message: Message, file: Part): string | null {
  if (file.type === 'file' && file.callId !== undefined) {
    const call = message.parts.find((part) => part.type === 'tool' && part.callId === file.callId);
    if (call?.type === 'tool') return call.tool;
  }
  let tool: string | null = null;
  for (const part of message.parts) {
    if (part === file) return tool;
    tool = part.type === 'tool' ? part.tool : part.type === 'text' && part.text.trim() !== '' ? null : tool;
  }
  return null;
}

function partBlocks(message: Message, part: Part, options: Required<TranscriptOptions>): string[] {
  const speaker = message.summary ? 'Summary of earlier conversation' : ROLE_LABELS[message.role];
  switch (part.type) {
    case 'text':
      return part.text.trim() === '' ? [] : [`[${speaker}]: ${inlineContent(part.text)}`];
    case 'reasoning':
      return options.includeReasoning && part.text.trim() !== ''
        ? [`[Assistant thinking]: ${inlineContent(part.text)}`]
        : [];
    case 'tool': {
      const args = inlineContent(
        toolCallArguments(part.input, { format: 'display' }),
        options.toolArgsMaxChars,
      );
      return [
        `[Assistant tool call]: ${inlineContent(part.tool)}(${args})`,
        toolResultLine(part, options.toolResultMaxChars),
      ];
    }
    case 'file': {
      // A placeholder, never the bytes: a data: URL or a stored image's reference is named by
      // what it is; the text around it is in the blocks before and after.
      const name = inlineContent(part.filename ?? fileDescription(part.url, part.mime));
      const tool = producingTool(message, part);
      const from = tool ? ` from tool ${inlineContent(tool)}` : '';
      return [`[${speaker} attached file: ${name} (${inlineContent(part.mime)})${from}]`];
    }
    case 'compaction':
      // The request marker carries no content; the previous summary is given to the summarizer itself.
      return [];
    default:
      return assertNever(part, 'part');
  }
}

/**
 * The transcript of `messages`, one labelled block per part, blocks separated by blank lines:
 * `[User]:`, `[Assistant]:`, `[Assistant thinking]:` (optional), `[Assistant tool call]: name(args)`
 * with arguments cut to `toolArgsMaxChars`, then `[Tool result]:` cut to `toolResultMaxChars`
 * (a pruned output reads `[Old tool result content cleared — recall <callId>]`, an unfinished call
 * `[Tool execution was interrupted]`) or `[Tool error]:`; a failed turn adds `[Assistant error]:`.
 * Returned bare: {@link buildSummaryPrompt} wraps it in `<conversation>` tags. Content is escaped
 * where it lands ({@link escapePromptData}): a content line that would open with `[` or `<`, and
 * a framing tag anywhere, get a backslash before the bracket, so every line that opens with a
 * bracket is a label written here.
 */
export function serializeTranscript(messages: readonly Message[], options: TranscriptOptions = {}): string {
  const resolved: Required<TranscriptOptions> = {
    toolResultMaxChars: options.toolResultMaxChars ?? DEFAULT_POLICY.summarizer.toolResultMaxChars,
    toolArgsMaxChars: options.toolArgsMaxChars ?? DEFAULT_POLICY.summarizer.toolArgsMaxChars,
    includeReasoning: options.includeReasoning ?? false,
  };
  const blocks: string[] = [];
  for (const message of messages) {
    for (const part of message.parts) blocks.push(...partBlocks(message, part, resolved));
    if (message.error !== null) {
      blocks.push(`[${ROLE_LABELS[message.role]} error]: ${inlineContent(message.error.message)}`);
    }
  }
  return blocks.join('\n\n');
}
