/**
 * A long text counted in parts, so that the code units the count reads (code-units.ts: two
 * bytes a character) are copied a part at a time, not all of a 31 MiB body at once.
 */

/** Characters from which a text is cut into parts, each about this long. */
export const SEGMENT_CHARS = 1 << 20;

const isAsciiLetterOrDigit = (code: number): boolean =>
  (code >= 48 && code <= 57) || ((code | 0x20) >= 97 && (code | 0x20) <= 122);

/**
 * Where `text` is cut into parts whose counts sum to the whole's: after a line feed that an
 * ASCII letter or digit follows, the first such place `size` characters or more after the last
 * cut. Both encodings' patterns end a piece there: a piece holds a line feed only as whitespace
 * (which a letter or digit ends) or as the line feeds after punctuation (`[\r\n]*`, o200k's
 * `[\r\n/]*`), and no pattern looks behind. A text without such a place stays whole. Returns
 * each part's end, the text's length last.
 */
export function segmentEnds(text: string, size = SEGMENT_CHARS): number[] {
  const ends: number[] = [];
  let from = 0;
  while (text.length - from > size) {
    let cut = -1;
    for (let at = text.indexOf('\n', from + size); at !== -1; at = text.indexOf('\n', at + 1)) {
      if (isAsciiLetterOrDigit(text.charCodeAt(at + 1))) {
        cut = at + 1;
        break;
      }
    }
    if (cut === -1) break;
    ends.push(cut);
    from = cut;
  }
  ends.push(text.length);
  return ends;
}
