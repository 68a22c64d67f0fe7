/**
 * What a TypeScript source imports, read without a parser: the source is masked (strings,
 * comments and regular expressions blanked) so that only real import and export statements match.
 * Used by scripts/check-import-cycles.ts.
 */

/** One relative import of a source file. */
export interface ImportRef {
  specifier: string;
  /** `import type …` / `export type … from`: erased at run time. */
  typeOnly: boolean;
}

// ---------------------------------------------------------------------------------------------
// Lexing: what is code, what is a string
// ---------------------------------------------------------------------------------------------

/** Keywords after which a `/` starts a regular expression, not a division. */
const REGEX_AFTER_KEYWORDS = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);
const REGEX_AFTER_PUNCTUATION = '(,=:[!&|?{};+-*%<>~^';

/**
 * `source` with comments blanked, regular expressions and template literals (outside their
 * `${…}` expressions) blanked, and every quoted string replaced by `'#N'`, where `strings[N]` is
 * its content. Imports are then plain patterns over code that cannot be fooled by text.
 */
export function maskSource(source: string): { code: string; strings: string[] } {
  const strings: string[] = [];
  let code = '';
  let i = 0;
  /** Open `${` expressions: the brace depth inside each, to find the `}` that closes it. */
  const templateDepths: number[] = [];

  /** The last word or punctuation character of the code so far (scanning back, no copies). */
  const lastSignificant = (): string => {
    let end = code.length;
    while (end > 0 && /\s/.test(code[end - 1] as string)) end -= 1;
    let start = end;
    while (start > 0 && /[\w$]/.test(code[start - 1] as string)) start -= 1;
    return start < end ? code.slice(start, end) : (code[end - 1] ?? '');
  };
  const startsRegex = (): boolean => {
    const last = lastSignificant();
    if (last === '') return true;
    if (/^[\w$]+$/.test(last)) return REGEX_AFTER_KEYWORDS.has(last);
    return REGEX_AFTER_PUNCTUATION.includes(last);
  };

  /** Skips a template literal's text from `i` (after the opening backtick or a `}`). */
  const templateText = (): void => {
    while (i < source.length) {
      const c = source[i];
      if (c === '\\') {
        i += 2;
      } else if (c === '`') {
        code += '`';
        i += 1;
        return;
      } else if (c === '$' && source[i + 1] === '{') {
        code += '${';
        i += 2;
        templateDepths.push(0);
        return;
      } else {
        if (c === '\n') code += '\n';
        i += 1;
      }
    }
  };

  while (i < source.length) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i += 1;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      code += source.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      let text = '';
      while (j < source.length && source[j] !== c && source[j] !== '\n') {
        if (source[j] === '\\') {
          text += source[j + 1] ?? '';
          j += 2;
        } else {
          text += source[j];
          j += 1;
        }
      }
      code += `'#${strings.length}'`;
      strings.push(text);
      i = j + 1;
    } else if (c === '`') {
      code += '`';
      i += 1;
      templateText();
    } else if (c === '/' && startsRegex()) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== '\n') {
        const r = source[j];
        if (r === '\\') j += 1;
        else if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        j += 1;
      }
      j += 1;
      while (j < source.length && /[a-z]/i.test(source[j] as string)) j += 1;
      code += '/r/';
      i = j;
    } else if (templateDepths.length > 0 && (c === '{' || c === '}')) {
      const depth = templateDepths.length - 1;
      if (c === '{') {
        templateDepths[depth] = (templateDepths[depth] ?? 0) + 1;
        code += c;
        i += 1;
      } else if ((templateDepths[depth] ?? 0) > 0) {
        templateDepths[depth] = (templateDepths[depth] ?? 0) - 1;
        code += c;
        i += 1;
      } else {
        // The `}` closing a `${…}`: back to the template's text.
        templateDepths.pop();
        code += '}';
        i += 1;
        templateText();
      }
    } else {
      code += c;
      i += 1;
    }
  }
  return { code, strings };
}

const IMPORT_PATTERNS: ReadonlyArray<{ pattern: RegExp; typeGroup: number | null }> = [
  // import x from, import { a, type b } from, import * as ns from, import type { T } from
  { pattern: /(?<![\w$.])import\s+(type\s+)?[^;'()]*?\bfrom\s*'#(\d+)'/g, typeGroup: 1 },
  // import './side-effect'
  { pattern: /(?<![\w$.])import\s*'#(\d+)'/g, typeGroup: null },
  // import('./lazy')
  { pattern: /(?<![\w$.])import\s*\(\s*'#(\d+)'\s*[,)]/g, typeGroup: null },
  // export * from, export * as ns from, export { a } from, export type { T } from
  {
    pattern: /(?<![\w$.])export\s+(type\s+)?(?:\*(?:\s+as\s+[\w$]+)?|\{[^}]*\})\s*from\s*'#(\d+)'/g,
    typeGroup: 1,
  },
];

/** Every import and re-export of a TypeScript source (relative or not), in order of appearance. */
export function importsOf(source: string): ImportRef[] {
  const { code, strings } = maskSource(source);
  const found: Array<ImportRef & { at: number }> = [];
  for (const { pattern, typeGroup } of IMPORT_PATTERNS) {
    for (const match of code.matchAll(pattern)) {
      const specifier = strings[Number(match.at(-1))] ?? '';
      const typeOnly = typeGroup !== null && match[typeGroup] !== undefined;
      found.push({ specifier, typeOnly, at: match.index });
    }
  }
  return found.sort((a, b) => a.at - b.at).map(({ specifier, typeOnly }) => ({ specifier, typeOnly }));
}

/** The relative imports and re-exports of a TypeScript source, in order of appearance. */
export function relativeImports(source: string): ImportRef[] {
  return importsOf(source).filter((ref) => ref.specifier.startsWith('./') || ref.specifier.startsWith('../'));
}
