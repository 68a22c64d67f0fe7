import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  firstCodePoints,
  recallQueryOf,
  recallVectorOf,
  recallWords,
  RECALL_WORD_MAX_BYTES,
  RECALL_WORDS_CHARS,
} from './recall-words';

describe('recallWords', () => {
  it.each([
    ['read src/parser.ts', ['read', 'src', 'parser', 'ts']],
    ['foo-bar foo_bar FOO.Bar', ['foo', 'bar', 'foo', 'bar', 'foo', 'bar']],
    ['mail ana@exämple.org', ['mail', 'ana', 'exämple', 'org']],
    ['C:\\Users\\Zoë\\notes.txt at host:8080', ['c', 'users', 'zoë', 'notes', 'txt', 'at', 'host', '8080']],
    ['ÄPFEL — Straße', ['äpfel', 'straße']],
    ['e\u0301te\u0301 (decomposed)', ['e\u0301te\u0301', 'decomposed']],
    [
      'abc123 v1.2.3 -5 x+y a&b <div class="k">',
      ['abc123', 'v1', '2', '3', '5', 'x', 'y', 'a', 'b', 'div', 'class', 'k'],
    ],
    ['日本語のテキスト ΩMEGA 𝐀𝐁c', ['日本語のテキスト', 'ωmega', '𝐀𝐁c']],
    ['nul\u0000between lone\ud800surrogate \udc00x', ['nul', 'between', 'lone', 'surrogate', 'x']],
    ["don't \\'quote", ['don', 't', 'quote']],
    ['', []],
    ['... --- ///', []],
  ])('%j', (text, words) => {
    expect(recallWords(text)).toEqual(words);
  });

  it('reads the first 100,000 code points only, counted as Postgres counts them', () => {
    const text = `${'a '.repeat(RECALL_WORDS_CHARS / 2 - 1)}bcd tail`;
    expect(recallWords(text).slice(-2)).toEqual(['a', 'bc']);
    // An astral character is one code point and two UTF-16 units.
    const astral = `${'𝐱'.repeat(RECALL_WORDS_CHARS - 1)}yz`;
    expect(firstCodePoints(astral, RECALL_WORDS_CHARS)).toBe(`${'𝐱'.repeat(RECALL_WORDS_CHARS - 1)}y`);
  });

  it('finds the same words in ASCII text by the regex as by the scan non-ASCII text takes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 200 }), (ascii) => {
        // One non-ASCII word after it sends the whole text to the scan.
        expect(recallWords(`${ascii} é`)).toEqual([...recallWords(ascii), 'é']);
      }),
    );
  });

  it('finds the words a Unicode regex finds, over full Unicode (astral, marks, lone surrogates)', () => {
    // The scan reads code units from a typed array and joins surrogate pairs itself: it must
    // still read code points as the regex (and \`codePointAt\`) do, a lone surrogate separating.
    const reference = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu) ?? [];
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        expect(recallWords(text)).toEqual(reference(text));
      }),
      { numRuns: 500 },
    );
    expect(recallWords('a\ud83d\ude00b \ud835\udc00\u0301x \udc00\ud800y')).toEqual([
      'a',
      'b',
      '\ud835\udc00\u0301x',
      'y',
    ]);
  });

  it('leaves out a word longer than Postgres keeps, by its UTF-8 bytes', () => {
    const ascii = 'a'.repeat(RECALL_WORD_MAX_BYTES);
    expect(recallWords(`${ascii} ok ${ascii}a`)).toEqual([ascii, 'ok']);
    const twoBytes = 'é'.repeat(1_024); // 2,048 bytes
    expect(recallWords(`${twoBytes} ok ${'é'.repeat(1_023)}`)).toEqual(['ok', 'é'.repeat(1_023)]);
  });
});

describe('recallVectorOf', () => {
  it('spells each word once with its positions', () => {
    expect(recallVectorOf('The cat saw the other cat, the end')).toBe(
      "'the':1,4,7 'cat':2,6 'saw':3 'other':5 'end':8",
    );
    expect(recallVectorOf('')).toBe('');
  });

  it('caps positions at 16,383 and keeps at most 256 of a word', () => {
    const vector = recallVectorOf(`${'x '.repeat(20_000)}y z`);
    const [x, y, z] = vector.split(' ');
    expect(x!.split(',')).toHaveLength(256);
    expect(y).toBe("'y':16383");
    expect(z).toBe("'z':16383");
    const late = recallVectorOf(`${'w '.repeat(16_390)}w`);
    expect(late.split(',')).toHaveLength(256);
  });

  it('has the words of recallWords, whatever the text (full Unicode, NUL, lone surrogates)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const vector = recallVectorOf(text);
        const words = [...new Set(recallWords(text))];
        expect(
          vector === '' ? [] : vector.split(' ').map((entry) => entry.replace(/^'(.*)':[\d,]+$/u, '$1')),
        ).toEqual(words);
        for (const word of words) expect(word).toMatch(/^[\p{L}\p{N}][\p{L}\p{N}\p{M}]*$/u);
      }),
    );
  });
});

describe('recallQueryOf', () => {
  it.each([
    ['parser', "'parser'", ['parser']],
    ['Parser TOKENS', "'parser' & 'tokens'", ['parser', 'tokens']],
    ['src/parser.ts', "'src' <-> 'parser' <-> 'ts'", ['src', 'parser', 'ts']],
    ['foo-bar foo_bar', "'foo' <-> 'bar' & 'foo' <-> 'bar'", ['foo', 'bar', 'foo', 'bar']],
    ['"exit code" 137', "'exit' <-> 'code' & '137'", ['exit', 'code', '137']],
    ['wombat or numbat', "'wombat' | 'numbat'", ['wombat', 'numbat']],
    ['a b OR c', "'a' & 'b' | 'c'", ['a', 'b', 'c']],
    ['timeout -retry', "'timeout' & !'retry'", ['timeout']],
    ['timeout -"dry run"', "'timeout' & !('dry' <-> 'run')", ['timeout']],
    ['a - b', "'a' & 'b'", ['a', 'b']],
    ['or a or', "'a'", ['a']],
    ['-only', "!'only'", []],
    ['"unclosed phrase', "'unclosed' <-> 'phrase'", ['unclosed', 'phrase']],
    ['zoë ÄPFEL', "'zoë' & 'äpfel'", ['zoë', 'äpfel']],
  ])('%j', (query, tsquery, words) => {
    expect(recallQueryOf(query)).toEqual({ tsquery, words });
  });

  it.each(['', '   ', '--- /// ...', 'or', '""', '-'])('%j looks for nothing', (query) => {
    expect(recallQueryOf(query)).toBeNull();
  });

  it("spells a query's words as a document's", () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), (text) => {
        const query = recallQueryOf(`"${text.replaceAll('"', ' ')}"`);
        expect(query?.words ?? []).toEqual(recallWords(text));
      }),
    );
  });
});
