/**
 * Facts a user states in their own words: identifiers (`camelCase`, `snake_case`, `Foo.bar()`,
 * anything in backticks), file paths, versions (`v1.2.3`, `node 20`), numbers with units
 * (`250 ms`, `32 MiB`, `3.5x`, `95 %`) and URLs. Deterministic and deliberately literal: each fact
 * is the text as written, so a later context can quote it back exactly.
 */
import { capText, MAX_LEDGER_FACT_CHARS, type LedgerFactKind } from './types';

/** One fact found in a text, in order of appearance. */
export interface FoundFact {
  kind: LedgerFactKind;
  text: string;
}

const URL = /\bhttps?:\/\/[^\s<>"'`]+/g;
const BACKTICKED = /`([^`\n]{1,120})`/g;
const SOFTWARE =
  'node|node\\.js|nodejs|python|go|golang|java|jdk|ruby|php|rust|rustc|typescript|react|vue|angular|svelte|next\\.js|next|vite|webpack|django|rails|flask|spring|postgres|postgresql|mysql|sqlite|redis|mongodb|kafka|elasticsearch|ubuntu|debian|alpine|kotlin|swift|scala|dotnet|\\.net|gcc|clang|llvm|cuda|pytorch|torch|tensorflow|npm|pnpm|yarn|bun|deno|docker|kubernetes|k8s|helm|terraform|openssl|nginx|ios|android|macos|windows|es|ecmascript|c\\+\\+|gpt|claude|gemini|llama';
const VERSION_PATTERNS: readonly RegExp[] = [
  new RegExp(`(?<![\\w.])(?:${SOFTWARE})[ @-]?v?\\d+(?:\\.\\d+){0,3}(?:-[0-9A-Za-z.]+)?(?!\\w|\\.\\d)`, 'gi'),
  /(?<![\w.])v\d+(?:\.\d+){1,3}(?:-[0-9A-Za-z.]+)?(?!\w|\.\d)/g,
  /(?<![\w.\-/])\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?(?!\w|\.\d)/g,
];
const UNITS =
  'ns|µs|us|ms|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|[KMGTP]i?B|[kmgt]b|bytes?|bits?|%|percent|px|rem|em|pt|tokens?|req/s|rps|qps|fps|Hz|kHz|MHz|GHz|°C|°F|cores?|CPUs?|GPUs?|vCPUs?|workers?|threads?|lines?|requests?|retries|k|K|M';
const QUANTITY = new RegExp(
  `(?<![\\w.])[-+~]?\\d+(?:[.,]\\d+)*(?:\\s?(?:${UNITS})(?![\\w/])|[x×](?![\\w]))`,
  'g',
);
const PATH =
  /(?<![\w/.:-])(?:\.{0,2}\/)?(?:[\w@.-]+\/)+[\w@.-]*\.[A-Za-z0-9]{1,8}(?![\w/])|(?<![\w/.:-])[\w-]+\.(?:ts|tsx|js|jsx|mjs|cjs|py|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|json|ya?ml|toml|md|sql|sh|css|scss|html|vue|svelte|lock|env|ini|cfg|txt|csv|xml|log|png|jpe?g|gif|svg|pdf|ipynb|proto)(?![\w/])/g;
const IDENTIFIER_PATTERNS: readonly RegExp[] = [
  // Starts where a dotted chain starts, so a long `a.b.c…` is scanned once, not from every link.
  /(?<![\w$.:])[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+\(\)/g, // Foo.bar(), mod::f()
  /\b[A-Za-z_$][\w$]*\(\)/g, // parseDate()
  /\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b/g, // camelCase
  /\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b/g, // PascalCase with two humps at least
  /\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b/g, // snake_case, SCREAMING_SNAKE
];

const count = (text: string, char: string): number => text.split(char).length - 1;

/** `https://x.org/a).` → `https://x.org/a`: sentence punctuation, and closers nothing in the match opened. */
function withoutTrailingPunctuation(value: string): string {
  let text = value;
  for (;;) {
    const last = text.at(-1) ?? '';
    const opener = { ')': '(', ']': '[', '}': '{' }[last];
    if (/[.,;:!?'"]/.test(last) || (opener !== undefined && count(text, last) > count(text, opener))) {
      text = text.slice(0, -1);
    } else return text;
  }
}

/** `text` with the given spans blanked, so a span already taken is not found again by a looser pattern. */
function blank(text: string, spans: readonly (readonly [number, number])[]): string {
  let result = '';
  let from = 0;
  for (const [start, end] of spans) {
    result += text.slice(from, start) + ' '.repeat(end - start);
    from = end;
  }
  return result + text.slice(from);
}

/**
 * Longest line read for facts. Longer lines are pasted data (logs, minified code), not
 * statements, and bounding them keeps every pattern's cost linear in the message.
 */
export const MAX_FACT_LINE_CHARS = 1_000;

/**
 * What each pattern cannot match without: a line lacking it is not scanned (most lines of prose
 * lack most of them), which finds the same facts. Blanking spans only removes characters, so a
 * line that lacks one before a pattern lacks it after.
 */
const HAS_DIGIT = /\d/;
const HAS_UPPER = /[A-Z]/;
const mayHold = {
  tag: (line: string) => line.includes('<'),
  url: (line: string) => line.includes('://'),
  backticked: (line: string) => line.includes('`'),
  // Both alternatives end in a dot and an extension.
  path: (line: string) => line.includes('.'),
  // `…v1`, `node 20`: a digit; the two others `\d+\.\d+` besides.
  softwareVersion: (line: string) => HAS_DIGIT.test(line),
  dottedVersion: (line: string) => line.includes('.') && HAS_DIGIT.test(line),
  quantity: (line: string) => HAS_DIGIT.test(line),
  // `Foo.bar()` and `parseDate()` need `()`, camelCase and PascalCase an uppercase letter, snake_case `_`.
  call: (line: string) => line.includes('()'),
  hump: (line: string) => HAS_UPPER.test(line),
  snake: (line: string) => line.includes('_'),
};
const IDENTIFIER_NEEDS = [mayHold.call, mayHold.call, mayHold.hump, mayHold.hump, mayHold.snake];
const VERSION_NEEDS = [mayHold.softwareVersion, mayHold.dottedVersion, mayHold.dottedVersion];

/** Facts of one line, each with its position. */
function factsInLine(line: string): { kind: LedgerFactKind; text: string; at: number }[] {
  const found: { kind: LedgerFactKind; text: string; at: number }[] = [];
  // Markup tags (`<environment_context>`) are structure, not something the user said.
  let rest = mayHold.tag(line)
    ? line.replace(/<\/?[A-Za-z][\w:-]*(?:\s[^<>]*)?\/?>/g, (tag) => ' '.repeat(tag.length))
    : line;
  const take = (kind: LedgerFactKind, pattern: RegExp, valueOf: (match: RegExpExecArray) => string): void => {
    const spans: [number, number][] = [];
    for (const match of rest.matchAll(pattern)) {
      spans.push([match.index, match.index + match[0].length]);
      const value = valueOf(match);
      if (value !== '') found.push({ kind, text: capText(value, MAX_LEDGER_FACT_CHARS), at: match.index });
    }
    if (spans.length > 0) rest = blank(rest, spans);
  };
  const whole = (match: RegExpExecArray): string => withoutTrailingPunctuation(match[0]);
  if (mayHold.url(rest)) take('url', URL, whole);
  if (mayHold.backticked(rest)) {
    const spans: [number, number][] = [];
    for (const match of rest.matchAll(BACKTICKED)) {
      const inner = match[1]!.trim();
      PATH.lastIndex = 0;
      const kind: LedgerFactKind = PATH.test(inner) && !/\s/.test(inner) ? 'path' : 'identifier';
      if (inner !== '') found.push({ kind, text: capText(inner, MAX_LEDGER_FACT_CHARS), at: match.index });
      spans.push([match.index, match.index + match[0].length]);
    }
    PATH.lastIndex = 0;
    if (spans.length > 0) rest = blank(rest, spans);
  }
  if (mayHold.path(rest)) take('path', PATH, whole);
  VERSION_PATTERNS.forEach((pattern, i) => {
    if (VERSION_NEEDS[i]!(rest)) take('version', pattern, whole);
  });
  if (mayHold.quantity(rest)) take('quantity', QUANTITY, whole);
  IDENTIFIER_PATTERNS.forEach((pattern, i) => {
    if (IDENTIFIER_NEEDS[i]!(rest)) take('identifier', pattern, whole);
  });
  return found.sort((a, b) => a.at - b.at);
}

/** Every fact in `text`, deduplicated, in order of first appearance. */
export function factsInText(text: string): FoundFact[] {
  const seen = new Set<string>();
  const facts: FoundFact[] = [];
  for (const line of text.split('\n')) {
    for (const fact of factsInLine(line.slice(0, MAX_FACT_LINE_CHARS))) {
      const key = `${fact.kind}\u0000${fact.text}`;
      if (seen.has(key)) continue;
      seen.add(key);
      facts.push({ kind: fact.kind, text: fact.text });
    }
  }
  return facts;
}
