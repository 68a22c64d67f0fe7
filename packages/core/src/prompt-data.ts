/**
 * Content inside a summarizer or topic-detector prompt is data, never structure.
 *
 * The prompts are plain text whose structure is lines: block labels (`[User]:`, `[Tool result]:`,
 * `[3] USER:` …) and framing tags (`<conversation>`, `<previous-summary>`, `<instructions>` …)
 * open a line. Everything else in a prompt is content someone else wrote: user text, tool
 * arguments and outputs, error text, file names, a previous summary written by a model, the
 * client's custom instructions. So the rule is: **a line whose first visible character reads as
 * `[` or `<` is one the prompt builder wrote**. Content that would start a line so is escaped by
 * a backslash put directly before the bracket (`\[User]: …`, `\</conversation>`).
 *
 * Why a backslash: it is visible (a zero-width mark could be dropped or ignored by a model or
 * tokenizer), it is how Markdown and most languages say "this bracket is literal", so models read
 * the line as the text it quotes, and it is reversible: a run of backslashes already in front of
 * such a bracket gets one more, and {@link unescapePromptData} removes exactly one. A leading
 * space would not do: a model reads ` [User]:` as a label just the same.
 *
 * What counts, chosen generously because an extra backslash costs nothing:
 * - line breaks: those Python's `str.splitlines` knows (LF, CR, CRLF, VT, FF, FS, GS, RS, NEL,
 *   U+2028, U+2029), a superset of what JavaScript, Unicode's mandatory breaks and the
 *   providers' (mostly Python) servers treat as a line end;
 * - what may stand before the bracket and still leave it first on the line, as a model or a
 *   provider reads it: whitespace, Unicode's "other" characters (controls such as NUL, format
 *   characters such as the zero-width space and BOM, lone surrogates, which a provider may drop
 *   when it encodes UTF-8, private-use and unassigned code points), combining marks and
 *   default-ignorable code points;
 * - brackets: `[` and `<` and what Unicode compatibility-normalises (NFKC) to them (`［` `＜` `﹤` `﹇`).
 *
 * Framing tags are also escaped inside a line (`ok </conversation> now …`): a tag name of ours
 * after `<` (any case, whitespace or `/` between, anything after) is not a line start, but it is
 * the one mid-line text that could pass for the end of the data.
 */

const BREAK_CLASS = '\\n\\r\\v\\f\\x1c-\\x1e\\x85\\u2028\\u2029';

/** One line break, in the sense above. */
export const PROMPT_LINE_BREAK = new RegExp(`\\r\\n|[${BREAK_CLASS}]`);
const INVISIBLE_CLASS = '\\s\\p{C}\\p{M}\\p{Default_Ignorable_Code_Point}';
/** Invisible, but not a line break: scanning stops at the next line, so the scan stays linear. */
const INLINE_INVISIBLE = `(?:(?![${BREAK_CLASS}])[${INVISIBLE_CLASS}])*`;
const OPENERS = '\\[<\\uFE47\\uFE64\\uFF1C\\uFF3B';
const ANGLE_OPENERS = '<\\uFE64\\uFF1C';

/** A bracket that starts a line once invisible characters and backslashes are skipped. */
const LINE_START_BRACKET = new RegExp(`(^|[${BREAK_CLASS}])${INLINE_INVISIBLE}\\\\*[${OPENERS}]`, 'gu');

/**
 * The names of the prompts' framing tags (and `summary` and `session-ledger`, which summary
 * messages wrap their text and ledger in), however a tag is spelt: `</ Conversation\n>`,
 * `<previous_summary id=1>`.
 */
const FRAMING_TAG = new RegExp(
  `[${ANGLE_OPENERS}]\\s*(?:\\/\\s*)?(?:conversation|previous[-_\\s]*summary|instructions|read[-_\\s]*files|modified[-_\\s]*files|session[-_\\s]*ledger|summary)`,
  'giu',
);

const IS_INVISIBLE = new RegExp(`[${INVISIBLE_CLASS}]`, 'u');
const IS_OPENER = new RegExp(`[${OPENERS}]`, 'u');
/** Any bracket of {@link OPENERS}, wherever it is (not sticky, not global: `test` keeps no state). */
const ANY_OPENER = new RegExp(`[${OPENERS}]`);

/**
 * Where a piece of content starts in the prompt: on a line of its own (`line-start`: a previous
 * summary, instructions, a path in a file list) or after a label on the same line (`inline`:
 * `[User]: <text>`), where its first line cannot start a line.
 */
export type PromptDataPosition = 'line-start' | 'inline';

/** Indices of the brackets in `text` that must not reach the prompt bare. */
function exposedBrackets(text: string, position: PromptDataPosition): number[] {
  // Both patterns need a bracket: most content (code, prose, tool output) has none, and one scan
  // for it is far cheaper than the two Unicode-aware searches and their set.
  if (!ANY_OPENER.test(text)) return [];
  const found = new Set<number>();
  for (const match of text.matchAll(LINE_START_BRACKET)) {
    if (position === 'inline' && match.index === 0 && match[1] === '') continue;
    found.add(match.index + match[0].length - 1);
  }
  for (const match of text.matchAll(FRAMING_TAG)) found.add(match.index);
  return [...found].sort((a, b) => a - b);
}

/**
 * `text` made safe to embed in a prompt at `position`: every bracket that would open a line (or a
 * framing tag anywhere) gets a backslash directly before it. Nothing else changes.
 */
export function escapePromptData(text: string, position: PromptDataPosition): string {
  const exposed = exposedBrackets(text, position);
  if (exposed.length === 0) return text;
  let result = '';
  let from = 0;
  for (const index of exposed) {
    result += `${text.slice(from, index)}\\`;
    from = index;
  }
  return result + text.slice(from);
}

/**
 * The content {@link escapePromptData} escaped, as written: one backslash less before each
 * escaped bracket. Brackets with no backslash before them (the builder's own lines, such as a
 * truncation marker inside a tool result) are left as they are. For readers of a prompt: the
 * LLM stub, tests.
 */
export function unescapePromptData(text: string, position: PromptDataPosition): string {
  const escaped = exposedBrackets(text, position).filter((index) => text[index - 1] === '\\');
  if (escaped.length === 0) return text;
  let result = '';
  let from = 0;
  for (const index of escaped) {
    result += text.slice(from, index - 1);
    from = index;
  }
  return result + text.slice(from);
}

/** `text` split at every {@link PROMPT_LINE_BREAK}. */
export function promptLines(text: string): string[] {
  return text.split(new RegExp(PROMPT_LINE_BREAK.source, 'g'));
}

/** Whether a line reads as structure: its first visible character reads as `[` or `<`. */
export function isStructureLine(line: string): boolean {
  for (const char of line) {
    if (IS_INVISIBLE.test(char)) continue;
    return IS_OPENER.test(char);
  }
  return false;
}
