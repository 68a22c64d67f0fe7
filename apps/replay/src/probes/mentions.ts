/**
 * Does a text still say what a sentence said? Summaries paraphrase, so an exact match is too
 * strict and a single keyword too loose: a sentence counts as mentioned when its normalised form
 * is a substring, or when its cue words (must, never, …: the part that makes it a constraint) are
 * all there and at least `coverage` of its content words are.
 */

const STOPWORDS = new Set(
  (
    'the and for are but not you your with this that from have has was were will would should could ' +
    'can its into onto than then them they their there here what when where which while who whom why how ' +
    'all any each our out own same some such too very just also only over under about after before again ' +
    'let lets please now use make sure'
  ).split(' '),
);

/** Lower case, "don't" spelled "do not", quotes and markdown marks dropped, whitespace collapsed. */
export function normalise(text: string): string {
  return text
    .toLowerCase()
    .replace(/\bdon['’]?t\b/g, 'do not')
    .replace(/[`*_"“”‘’]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The words that carry a sentence's meaning: three letters or more, not a stopword. */
export function contentWords(text: string): string[] {
  return [...new Set(normalise(text).match(/[\p{L}\p{N}][\p{L}\p{N}._/-]*[\p{L}\p{N}]/gu) ?? [])].filter(
    (word) => word.length >= 3 && !STOPWORDS.has(word),
  );
}

/** A searchable form of a long text (a summary, a window): normalised once, its words indexed. */
export interface Haystack {
  text: string;
  words: Set<string>;
}

export function haystack(text: string): Haystack {
  const normalised = normalise(text);
  return {
    text: normalised,
    words: new Set(normalised.match(/[\p{L}\p{N}][\p{L}\p{N}._/-]*[\p{L}\p{N}]/gu) ?? []),
  };
}

export interface MentionOptions {
  /** Share of the sentence's content words the text must contain (0–1). */
  coverage: number;
  /** Words (lower case) that must all be there, e.g. the constraint's `never`. */
  required?: readonly string[];
}

export function mentions(text: Haystack, sentence: string, options: MentionOptions): boolean {
  const needle = normalise(sentence).replace(/[.!?]+$/, '');
  if (needle !== '' && text.text.includes(needle)) return true;
  for (const word of options.required ?? []) {
    if (!word.split(' ').every((w) => text.words.has(w))) return false;
  }
  const words = contentWords(sentence);
  if (words.length === 0) return false;
  const found = words.filter((word) => text.words.has(word)).length;
  return found / words.length >= options.coverage;
}
