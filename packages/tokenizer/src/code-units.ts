/**
 * A text's UTF-16 code units as a typed array, for the counting loops to index instead of calling
 * `charCodeAt`. Why: once any module in the process subclasses `String` (ioredis does, with
 * `class VerbatimString extends String`, and every worker loads it through BullMQ), V8's optimized
 * `charCodeAt` runs three to four times slower, and with it every count (measured: 6.4 ms instead
 * of 1.7 for a 122K-character prompt). Indexing a `Uint16Array` is not affected, and the copy is
 * one native pass (~0.05 ms per 100K characters).
 */
export function codeUnitsOf(text: string): Uint16Array {
  const bytes = Buffer.from(text, 'utf16le');
  // Buffer's pool aligns its slices to 8 bytes; a misaligned one is copied, never reinterpreted.
  if (bytes.byteOffset % 2 === 0) return new Uint16Array(bytes.buffer, bytes.byteOffset, text.length);
  const units = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
  return units;
}
