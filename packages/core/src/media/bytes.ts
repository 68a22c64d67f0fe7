/**
 * Bounded reads of media bytes. An image's size is in its first bytes (PNG, GIF, WebP) or a
 * segment walk away (JPEG): a reader asks for small windows at offsets and never needs the whole
 * decoded image, so a data URL is read where its base64 text says, decoding only those windows.
 */
import { BASE64_VALUE, base64DecodedLength } from '@compactor/contract';

/** Bytes that can be read a window at a time: `read` returns at most `length` bytes, fewer at the end. */
export interface ByteSource {
  /** Total bytes. */
  readonly length: number;
  read(offset: number, length: number): Uint8Array;
}

/** A source over bytes already in memory. */
export function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    length: bytes.length,
    read: (offset, length) => bytes.subarray(Math.max(0, offset), Math.max(0, offset + length)),
  };
}

/**
 * A source over well-formed base64 text (check with contract's `isWellFormedBase64` first): each read
 * decodes only the quads that hold the window asked for.
 */
export function base64Source(text: string): ByteSource {
  const length = base64DecodedLength(text);
  return {
    length,
    read(offset, want) {
      const start = Math.max(0, offset);
      const end = Math.min(length, start + Math.max(0, want));
      if (end <= start) return new Uint8Array(0);
      const firstQuad = Math.floor(start / 3);
      const lastQuad = Math.floor((end - 1) / 3);
      const out = new Uint8Array((lastQuad - firstQuad + 1) * 3);
      let o = 0;
      for (let q = firstQuad; q <= lastQuad; q++) {
        let bits = 0;
        for (let k = 0; k < 4; k++) {
          const code = text.charCodeAt(q * 4 + k);
          bits = (bits << 6) | (code === 61 ? 0 : BASE64_VALUE[code]!);
        }
        out[o++] = (bits >>> 16) & 0xff;
        out[o++] = (bits >>> 8) & 0xff;
        out[o++] = bits & 0xff;
      }
      const skip = start - firstQuad * 3;
      return out.subarray(skip, skip + (end - start));
    },
  };
}
