/**
 * Whether a context says something verbatim: the test the replay's probes and the survival
 * benchmark count "present" by. An item is there when it is a substring of the text once
 * whitespace is collapsed to single spaces on both sides; nothing else is normalised (no case
 * folding, no word-bag matching: a paraphrase is not the path, the command or the user's sentence).
 */

/** Whitespace collapsed to single spaces, trimmed; case kept (a path's case is part of it). */
export function collapseWhitespace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** A text normalised once, to test many items against. */
export interface VerbatimText {
  readonly text: string;
}

export function verbatimText(parts: readonly string[]): VerbatimText {
  return { text: collapseWhitespace(parts.join('\n')) };
}

/** Whether `item` is in `text` verbatim, whitespace collapsed (an empty item never is). */
export function holdsVerbatim(text: VerbatimText, item: string): boolean {
  const needle = collapseWhitespace(item);
  return needle !== '' && text.text.includes(needle);
}

/** The strings of a tool call's input (nested values included, numbers and booleans as text). */
export function toolInputStrings(input: unknown): string[] {
  if (typeof input === 'string') return [input];
  if (Array.isArray(input)) return input.flatMap(toolInputStrings);
  if (typeof input === 'object' && input !== null) return Object.values(input).flatMap(toolInputStrings);
  return typeof input === 'number' || typeof input === 'boolean' ? [String(input)] : [];
}

/** A Chat Completions message as far as what a model reads of it is concerned. */
export interface ChatMessageLike {
  content?: unknown;
  tool_calls?: ReadonlyArray<{ function?: { name?: string; arguments?: string } }>;
}

/**
 * The text a model reads in a Chat Completions message: its content (text parts joined) and its
 * tool calls' names and argument strings (JSON arguments read as the values they hold, so a path
 * or a command is tested as written, not with its quotes escaped).
 */
export function chatMessageText(message: ChatMessageLike): string {
  const content =
    typeof message.content === 'string'
      ? message.content
      : Array.isArray(message.content)
        ? message.content
            .map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : ''))
            .join('\n')
        : '';
  const calls = (message.tool_calls ?? []).flatMap((call) => {
    let input: unknown = call.function?.arguments ?? '';
    try {
      input = JSON.parse(String(input));
    } catch {
      // Arguments that are not JSON are read as the text they are.
    }
    return [call.function?.name ?? '', ...toolInputStrings(input)];
  });
  return [content, ...calls].join('\n');
}
