import { get_encoding, type Tiktoken } from 'tiktoken';
import type { EncodingName } from '../encodings';

// tiktoken's own Rust implementation (compiled to WASM): the ground truth every count is checked
// against. js-tiktoken is not, as it splits U+0085 and U+FEFF differently (see split-pattern.ts).
const references = new Map<EncodingName, Tiktoken>();

/**
 * Tokens in `text` according to tiktoken, special-token text counted as ordinary text. Quadratic
 * on long pieces: keep runs without whitespace to a few thousand characters.
 */
export function referenceCount(encoding: EncodingName, text: string): number {
  let reference = references.get(encoding);
  if (!reference) {
    reference = get_encoding(encoding);
    references.set(encoding, reference);
  }
  return reference.encode(text, [], []).length;
}
