import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { loadEncoding, type EncodingName, type LoadedEncoding } from './encodings';
import { segmentEnds } from './segments';
import { MergedPieceCache, TextTokenCount } from './text-token-count';

/**
 * How long `count` works before it lets the event loop run. Well under the 100 ms budget for a
 * synchronous stretch, and long enough that the yields cost little (each is ~0.1 ms).
 */
const SLICE_MS = 12;

/** Options of {@link Tokenizer.count}. */
export interface CountOptions {
  /** Aborting it makes `count` reject with an `AbortError` at its next yield point. */
  signal?: AbortSignal;
}

/**
 * Counts tokens exactly as tiktoken would encode the text with `encoding`, special-token text
 * (`<|endoftext|>` …) counted as ordinary text. Safe to share, concurrent counts included.
 */
export interface Tokenizer {
  /** The byte-pair encoding this tokenizer counts with. */
  readonly encoding: EncodingName;
  /**
   * Counts in one synchronous call. O(n log n) even on pathological text, but holds the event loop
   * for the whole count (about 1 ms per 10–15 KB of prose): use it for short texts only.
   */
  countSync(text: string): number;
  /**
   * Counts in slices of ~12 ms, letting the event loop run between them (also in the middle of
   * one huge piece's merge), so no synchronous stretch comes near 100 ms. The exception is a
   * single piece of millions of chars: scanning it and copying it to UTF-8 takes ~15–20 ms per
   * million before its merge can slice. Rejects with a `DOMException` named `AbortError` (its
   * `cause` the signal's reason) once `options.signal` is aborted.
   */
  count(text: string, options?: CountOptions): Promise<number>;
}

class BpeTokenizer implements Tokenizer {
  // Shared by every count of this tokenizer, concurrent ones included: entries never go wrong.
  private readonly mergedPieces = new MergedPieceCache();

  constructor(private readonly loaded: LoadedEncoding) {}

  get encoding(): EncodingName {
    return this.loaded.name;
  }

  countSync(text: string): number {
    let tokens = 0;
    let from = 0;
    for (const end of segmentEnds(text)) {
      const counting = new TextTokenCount(this.loaded, part(text, from, end), this.mergedPieces);
      counting.run(Infinity);
      tokens += counting.tokens;
      from = end;
    }
    return tokens;
  }

  async count(text: string, options: CountOptions = {}): Promise<number> {
    const { signal } = options;
    throwIfAborted(signal);
    let tokens = 0;
    let from = 0;
    for (const end of segmentEnds(text)) {
      const counting = new TextTokenCount(this.loaded, part(text, from, end), this.mergedPieces);
      while (!counting.run(performance.now() + SLICE_MS)) {
        await nextMacrotask();
        throwIfAborted(signal);
      }
      tokens += counting.tokens;
      from = end;
    }
    return tokens;
  }
}

/** `text[from, end)`, the text itself when that is all of it. */
const part = (text: string, from: number, end: number): string =>
  from === 0 && end === text.length ? text : text.slice(from, end);

/** Rejects the way Node's own APIs do: a DOMException named AbortError, the reason as cause. */
function throwIfAborted(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  throw new DOMException('Token counting was aborted', { name: 'AbortError', cause: signal.reason });
}

const tokenizers = new Map<EncodingName, Tokenizer>();

/**
 * The tokenizer for `encoding` (default `o200k_base`, the encoding of current OpenAI models).
 * The first call per encoding parses its rank table (o200k_base ~65 ms); later calls return
 * the same instance.
 */
export function getTokenizer(encoding: EncodingName = 'o200k_base'): Tokenizer {
  let tokenizer = tokenizers.get(encoding);
  if (!tokenizer) {
    tokenizer = new BpeTokenizer(loadEncoding(encoding));
    tokenizers.set(encoding, tokenizer);
  }
  return tokenizer;
}
