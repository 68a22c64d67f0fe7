/**
 * The facts' patterns are skipped on lines that lack a character each needs (facts.ts `mayHold`):
 * the same facts as scanning every line with every pattern, which the reference below (facts.ts
 * as it was before the skips, verbatim) still does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { factsInText, type FoundFact } from './facts';
import { capText, MAX_LEDGER_FACT_CHARS, type LedgerFactKind } from './types';

// ---- reference: facts.ts at 80e8501 ----
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
const MAX_FACT_LINE_CHARS = 1_000;

/** Facts of one line, each with its position. */
function factsInLine(line: string): { kind: LedgerFactKind; text: string; at: number }[] {
  const found: { kind: LedgerFactKind; text: string; at: number }[] = [];
  // Markup tags (`<environment_context>`) are structure, not something the user said.
  let rest = line.replace(/<\/?[A-Za-z][\w:-]*(?:\s[^<>]*)?\/?>/g, (tag) => ' '.repeat(tag.length));
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
  take('url', URL, whole);
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
  take('path', PATH, whole);
  for (const pattern of VERSION_PATTERNS) take('version', pattern, whole);
  take('quantity', QUANTITY, whole);
  for (const pattern of IDENTIFIER_PATTERNS) take('identifier', pattern, whole);
  return found.sort((a, b) => a.at - b.at);
}

/** Every fact in `text`, deduplicated, in order of first appearance. */
function referenceFactsInText(text: string): FoundFact[] {
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

// ---- end of reference ----

/** Words and fragments users write, each tempting one pattern or another. */
const WORDS = [
  'please',
  'look',
  'at',
  'module',
  'and',
  'fix',
  'the',
  'failing',
  'test',
  'Never',
  'always',
  'use',
  'src/parser.ts',
  './lib/a.js',
  'README.md',
  'config.yaml',
  'node 20',
  'Python 3.12',
  'v1.2.3',
  '2.0.0-rc.1',
  '250 ms',
  '32 MiB',
  '3.5x',
  '95 %',
  '10k',
  'https://example.org/a?b=1).',
  '`retry.maxAttempts = 3`',
  '`src/a.ts`',
  'parseDate',
  'ParseDate',
  'parse_date_strict',
  'MAX_SIZE',
  'Foo.bar()',
  'reset()',
  'mod::f()',
  '<environment_context>',
  '</task>',
  '<b x="1">',
  'e.g.',
  '1.5',
  '(see',
  'notes)',
  'a.b.c.d()',
  '~3',
  '-4',
  'ok,',
  'done.',
  "it's",
  '×',
  'é',
  '日本',
  '_',
  '()',
  '.',
  ':',
  '//',
  '`',
  '<',
  'http://',
  'A',
  'z9',
  'x86_64',
  'postgres-14',
  'node@18.2',
  'es2022',
];

const line = fc
  .array(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 6 })), { maxLength: 30 })
  .chain((words) =>
    fc
      .array(fc.constantFrom(' ', '', '  ', '\t', ', ', '. '), {
        minLength: words.length,
        maxLength: words.length,
      })
      .map((gaps) => words.map((word, i) => word + gaps[i]).join('')),
  );

describe('factsInText with patterns skipped on lines that cannot match them', () => {
  it('finds the same facts as scanning every line with every pattern', () => {
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 4 }), (lines) => {
        const text = lines.join('\n');
        expect(factsInText(text)).toEqual(referenceFactsInText(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it('finds the same facts in realistic requests', () => {
    const requests = [
      'please look at module 12 and fix the failing test '.repeat(4),
      'Fix the date parser in src/parser.ts. Never touch the public API.',
      'We are on node 20 and Python 3.12, pin to v1.2.3 (not 2.0.0-rc.1); keep p99 under 250 ms',
      '<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>\nrename parseDate to parse_date_strict',
      'see https://github.com/o/r/issues/40) and call Foo.bar() then `reset()` in lib/util.js',
      'the build takes 3.5x longer with 8 workers and 32 MiB per request; MAX_RETRIES stays 3',
    ];
    for (const text of requests) expect(factsInText(text)).toEqual(referenceFactsInText(text));
    expect(factsInText(requests[0]!)).toEqual<FoundFact[]>([]);
  });
});
