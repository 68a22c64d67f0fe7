/**
 * Text an agent harness writes into user-role messages, told apart from the user's own words.
 * Coding agents put their own context where the user's requests go: Claude Code's local-command
 * blocks and reminders, Codex's environment context and AGENTS.md instructions, Cline's
 * environment details, aider's confirmation prompts, SWE-agent's task template. Taken as the
 * user's words, such text becomes the pinned goal or the latest request, and once pinned every
 * later compaction carries it forward while the real request is lost. Its "must" and "never"
 * rules (AGENTS.md, a harness's instructions) are the harness's, not constraints the user stated:
 * the harness sends them again on its own, so pinning them would only crowd out the user's.
 *
 * The messages themselves are never changed (the harness text stays in the history as context);
 * only what is read as a request skips it. Recognised, each only where the harness puts it (at
 * the start of a line), so a user who writes about a tag in a sentence keeps their sentence:
 * - blocks in one of {@link HARNESS_TAGS}, to their closing tag (or the end, when unclosed);
 * - Codex's `# AGENTS.md instructions for …` heading, through its `</INSTRUCTIONS>`;
 * - notes opening a line: `[Image: original …]`, `[Image #2]`, `[Request interrupted by user…]`,
 *   `[Pasted text #1 …]` (the note only: the user's words may follow it on its line), aider's
 *   `… (Y)es/(N)o … [Yes]: all` prompts and its session commands (`/add src/a.ts`, `/drop`,
 *   `/ls`, `/exit`: the whole line);
 * - whole messages: Claude Code's "This session is being continued from a previous conversation"
 *   summary, Cline's `[TASK RESUMPTION]`, `[ERROR] You did not use a tool` and `[tool] Result:`;
 * - SWE-agent's template: its opening line and its `INSTRUCTIONS:` part (the issue between them is
 *   the user's), and its `(Open file: …)` / `(Current directory: …)` / `bash-$` footer;
 * - Cline's wrappers: when a message holds `<task>`, `<feedback>`, `<answer>` or `<user_message>`
 *   blocks, their contents are the user's words and everything around them is the harness's.
 */

/** A part of a user message the harness wrote; `kind` names it (the tag, or the note's family). */
export interface HarnessBlock {
  kind: string;
  text: string;
}

export interface HarnessSplit {
  /** What the harness wrote, in order. */
  harness: HarnessBlock[];
  /** The user's own words, harness blocks taken out (blank lines around them collapsed), trimmed. */
  userText: string;
}

/** Tags whose blocks a harness writes into user messages. */
export const HARNESS_TAGS = [
  // Claude Code
  'local-command-caveat',
  'command-name',
  'command-message',
  'command-args',
  'local-command-stdout',
  'local-command-stderr',
  'system-reminder',
  'task-notification',
  'bash-input',
  'bash-stdout',
  'bash-stderr',
  'user-prompt-submit-hook',
  // Codex
  'environment_context',
  'user_instructions',
  'turn_aborted',
  'user_shell_command',
  'permissions instructions',
  'INSTRUCTIONS',
  // Cline
  'environment_details',
] as const;

/** Cline's wrappers around what the user typed. */
const USER_WRAPPERS = ['task', 'feedback', 'answer', 'user_message'];

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const TAG_NAMES = HARNESS_TAGS.map(escape).join('|');
/** An opening tag at a line's start, or right after another block's closing tag (`</bash-stdout><bash-stderr>`). */
const OPEN_TAG = new RegExp(`(?:^|(?<=</(?:${TAG_NAMES})>))[ \\t]*<(${TAG_NAMES})(?:\\s[^>\\n]*)?>`, 'gm');
const WRAPPER_OPEN = new RegExp(`^[ \\t]*<(${USER_WRAPPERS.join('|')})>`, 'gm');
const AGENTS_MD = /^[ \t]*# AGENTS\.md instructions\b.*$/gm;

/** aider's in-chat commands that manage the session (files, model, exit), not requests to the model. */
const AIDER_COMMANDS =
  'add|drop|ls|exit|quit|clear|reset|undo|tokens|help|model|models|map|map-refresh|diff|read-only|' +
  'commit|settings|paste|copy|copy-context|voice|web|run|test|lint|git|load|save|chat-mode|' +
  'editor|multiline-mode|report|think-tokens|reasoning-effort|weak-model|editor-model';

/** Notes at a line's start: a bracketed note (the user's words may follow it), or a whole line. */
const LINE_NOTES: ReadonlyArray<[kind: string, pattern: RegExp]> = [
  ['image', /^[ \t]*\[Image(?::| #\d+)[^\]\n]*\]/gm],
  ['interrupted', /^[ \t]*\[Request interrupted by user[^\]\n]*\]/gm],
  ['pasted-text', /^[ \t]*\[Pasted text #\d+[^\]\n]*\]/gm],
  ['aider-prompt', /^[^\n]*\? \(Y\)es\/\(N\)o\b[^\n]*$/gm],
  ['aider-command', new RegExp(`^[ \\t]*/(?:${AIDER_COMMANDS})(?:[ \\t][^\\n]*)?$`, 'gm')],
  ['swe-agent-footer', /^\((?:Open file|Current directory): [^\n]*\)[ \t]*$|^bash-\$[ \t]*$/gm],
];

/** Messages that are the harness's from their first line on. */
const WHOLE_MESSAGES: ReadonlyArray<[kind: string, pattern: RegExp]> = [
  ['continued-session', /^This session is being continued from a previous conversation\b/],
  ['cline-resumption', /^\[TASK RESUMPTION\]/],
  ['cline-error', /^\[ERROR\] You did not use a tool\b/],
  ['cline-tool-result', /^\[[\w-]+(?: for [^\]\n]*)?\] Result:/],
];

const SWE_AGENT_OPENING =
  /^We're currently solving the following (?:issue within our repository\. Here's the issue text:\s*\nISSUE:|[^\n]*?The description is:)[^\S\n]*\n?/;
const SWE_AGENT_INSTRUCTIONS = /^INSTRUCTIONS:[ \t]*$/m;

interface Span {
  start: number;
  end: number;
  kind: string;
}

/**
 * What every harness pattern above needs somewhere in the text: a bracket or `#`, a `/` opening
 * a line, or one of the phrases. Most messages have none, and this one scan then stands for a
 * dozen; a message that has one is read by all of them.
 */
const MAY_HOLD_HARNESS_TEXT =
  /[<[#]|^[ \t]*\/|\((?:Open file|Current directory): |bash-\$|\(Y\)es\/\(N\)o|This session is being continued|We're currently solving/m;

/** The harness blocks of `text` and the user's own words around them (see the module comment). */
export function harnessText(text: string): HarnessSplit {
  if (!MAY_HOLD_HARNESS_TEXT.test(text)) return { harness: [], userText: tidy(text) };
  return scannedHarnessText(text);
}

/** {@link harnessText} read by every pattern (exported for the test that compares the two). */
export function scannedHarnessText(text: string): HarnessSplit {
  // A wrapper says where the user's words are, whatever the harness put around them.
  const wrapped = closedBlocks(text, WRAPPER_OPEN, (tag) => `</${tag}>`, false);
  if (wrapped.length > 0) return unwrapped(text, wrapped);
  const lead = text.trimStart();
  for (const [kind, pattern] of WHOLE_MESSAGES) {
    if (pattern.test(lead)) return { harness: [{ kind, text: text.trim() }], userText: '' };
  }
  return split(text, harnessSpans(text));
}

/**
 * Texts whose user words are remembered: a compaction reads each user message's words three or
 * four times (its ledger, whether it is a request, the request's text, the kept messages), and
 * the harness patterns are a dozen scans each time. Keyed by the text itself, so the answer is
 * the same as computing it; bounded by characters held, and started over when full (no LRU cost
 * per lookup): a million characters, 1–4 MB, about a window's user messages. A text longer
 * than {@link MEMO_TEXT_MAX_CHARS} is computed every time.
 */
const MEMO_MAX_CHARS = 1_000_000;
const MEMO_TEXT_MAX_CHARS = 50_000;
const memo = new Map<string, string>();
let memoChars = 0;

/** The user's own words of `text` (`''` when the harness wrote all of it). */
export function userWords(text: string): string {
  if (text.length > MEMO_TEXT_MAX_CHARS) return harnessText(text).userText;
  const known = memo.get(text);
  if (known !== undefined) return known;
  const words = harnessText(text).userText;
  if (memoChars + text.length + words.length > MEMO_MAX_CHARS) {
    memo.clear();
    memoChars = 0;
  }
  memo.set(text, words);
  memoChars += text.length + words.length;
  return words;
}

function harnessSpans(text: string): Span[] {
  const spans: Span[] = [
    ...closedBlocks(text, OPEN_TAG, (tag) => `</${tag}>`, true),
    ...closedBlocks(text, AGENTS_MD, () => '</INSTRUCTIONS>', true).map((span) => ({
      ...span,
      kind: 'agents-md',
    })),
  ];
  for (const [kind, pattern] of LINE_NOTES) {
    for (const match of text.matchAll(pattern)) {
      spans.push({ start: match.index, end: match.index + match[0].length, kind });
    }
  }
  const opening = SWE_AGENT_OPENING.exec(text.trimStart());
  if (opening) {
    const start = text.length - text.trimStart().length;
    spans.push({ start, end: start + opening[0].length, kind: 'swe-agent' });
    const instructions = SWE_AGENT_INSTRUCTIONS.exec(text);
    if (instructions) spans.push({ start: instructions.index, end: text.length, kind: 'swe-agent' });
  }
  return merged(spans);
}

/**
 * Blocks from each match of `opening` (global; its first group names the block) through the
 * nearest `closing(name)` after it; with `toEnd`, an unclosed block runs to the end of the text,
 * else it is no block. An opening inside a block already found is part of it. Each closing tag is
 * searched for once past the last one found, so a text of many unclosed openings stays linear.
 */
function closedBlocks(
  text: string,
  opening: RegExp,
  closing: (name: string) => string,
  toEnd: boolean,
): Span[] {
  const spans: Span[] = [];
  const nextClose = new Map<string, number>();
  let coveredTo = 0;
  for (const match of text.matchAll(opening)) {
    if (match.index < coveredTo) continue;
    const name = match[1] ?? '';
    const close = closing(name);
    const from = match.index + match[0].length;
    let at = nextClose.get(close);
    if (at === undefined || (at >= 0 && at < from)) {
      at = text.indexOf(close, from);
      nextClose.set(close, at);
    }
    if (at < 0 && !toEnd) continue;
    const end = at < 0 ? text.length : at + close.length;
    spans.push({ start: match.index, end, kind: name });
    coveredTo = end;
  }
  return spans;
}

/** Spans in order, overlapping ones joined (a block inside another is part of it). */
function merged(spans: Span[]): Span[] {
  const out: Span[] = [];
  for (const span of [...spans].sort((a, b) => a.start - b.start || b.end - a.end)) {
    const last = out.at(-1);
    if (last && span.start <= last.end) last.end = Math.max(last.end, span.end);
    else out.push({ ...span });
  }
  return out;
}

function split(text: string, spans: readonly Span[]): HarnessSplit {
  const harness: HarnessBlock[] = [];
  const own: string[] = [];
  let from = 0;
  for (const span of spans) {
    own.push(text.slice(from, span.start));
    const block = text.slice(span.start, span.end).trim();
    if (block !== '') harness.push({ kind: span.kind, text: block });
    from = span.end;
  }
  own.push(text.slice(from));
  return { harness, userText: tidy(own.join('\n')) };
}

function unwrapped(text: string, wrapped: readonly Span[]): HarnessSplit {
  // Around the wrappers is the harness's; inside them, the user's words.
  const around = split(text, wrapped).userText;
  const inside = wrapped.map(({ start, end, kind }) =>
    text.slice(text.indexOf('>', start) + 1, end - `</${kind}>`.length),
  );
  return {
    harness: around === '' ? [] : [{ kind: 'cline', text: around }],
    userText: tidy(inside.join('\n\n')),
  };
}

/** Trailing spaces and runs of blank lines left by removed blocks dropped, trimmed. */
function tidy(text: string): string {
  return text
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
