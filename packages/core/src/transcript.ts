/**
 * Messages serialised as a plain-text transcript for the summarizer (Opal, klaude-code, pi).
 *
 * The transcript is data for the summarizer, not a conversation: every block is labelled
 * (`[User]:`, `[Assistant]:`, `[Tool result]:` …) and the prompt wraps it in `<conversation>`
 * tags. Tool outputs are bounded so the summarizer request itself does not overflow.
 */
import {
  assertNever,
  INTERRUPTED_TOOL_RESULT,
  PRUNED_OUTPUT_PLACEHOLDER,
  type Message,
  type Part,
  type Role,
  type ToolPart,
} from './model';
import { toolCallArguments } from './openai-format';
import { DEFAULT_POLICY } from './policy';

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
  if (text.length <= maxChars) return text;
  const dropped = text.length - maxChars;
  return `${text.slice(0, Math.max(0, maxChars))}\n[... ${dropped} more character${dropped === 1 ? '' : 's'} truncated]`;
}

/** A transcript must not be able to close the `<conversation>` tag it is wrapped in. */
function neutraliseTags(text: string): string {
  return text.replace(/<(\/?)(conversation|previous-summary)>/gi, '[$1$2]');
}

function toolResultLine(part: ToolPart, maxChars: number): string {
  switch (part.status) {
    case 'completed':
      // Pruning only ever clears completed outputs; an error stays visible whatever its mark says
      // (as in the OpenAI rendering).
      if (part.compactedAt !== null) return `[Tool result]: ${PRUNED_OUTPUT_PLACEHOLDER}`;
      return `[Tool result]: ${truncateForTranscript(part.output ?? '', maxChars)}`;
    case 'error':
      return `[Tool error]: ${truncateForTranscript(part.error ?? 'unknown error', maxChars)}`;
    case 'pending':
    case 'running':
      return `[Tool result]: ${INTERRUPTED_TOOL_RESULT}`;
    default:
      return assertNever(part.status, 'tool status');
  }
}

function partBlocks(message: Message, part: Part, options: Required<TranscriptOptions>): string[] {
  const speaker = message.summary ? 'Summary of earlier conversation' : ROLE_LABELS[message.role];
  switch (part.type) {
    case 'text':
      return part.text.trim() === '' ? [] : [`[${speaker}]: ${part.text}`];
    case 'reasoning':
      return options.includeReasoning && part.text.trim() !== ''
        ? [`[Assistant thinking]: ${part.text}`]
        : [];
    case 'tool': {
      const args = truncateForTranscript(
        toolCallArguments(part.input, { format: 'display' }),
        options.toolArgsMaxChars,
      );
      return [
        `[Assistant tool call]: ${part.tool}(${args})`,
        toolResultLine(part, options.toolResultMaxChars),
      ];
    }
    case 'file':
      return [`[${speaker} attached file: ${part.filename ?? part.url.slice(0, 100)} (${part.mime})]`];
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
 * (a pruned output reads `[Old tool result content cleared]`, an unfinished call
 * `[Tool execution was interrupted]`) or `[Tool error]:`; a failed turn adds `[Assistant error]:`.
 * Returned bare: {@link buildSummaryPrompt} wraps it in `<conversation>` tags, and any such tag
 * inside a message is defused so the data cannot close the wrapper.
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
    if (message.error !== null) blocks.push(`[${ROLE_LABELS[message.role]} error]: ${message.error.message}`);
  }
  return neutraliseTags(blocks.join('\n\n'));
}
