/**
 * Image dimensions from the header alone (PNG, JPEG, GIF, WebP): what the providers' token
 * formulas need. Reads are bounded windows of a {@link ByteSource}; nothing is decoded.
 */
import type { ByteSource } from './bytes';

/** The image formats the providers accept (and nothing else is counted as an image). */
export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

/** What a header says: its format and size in pixels. */
export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
}

/** The mime type of each format, as data URLs and provider blocks name it. */
export const IMAGE_FORMAT_MIME: Readonly<Record<ImageFormat, string>> = Object.freeze({
  png: 'image/png',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
});

/** A JPEG walks at most this many segments before its frame header: real files have a dozen. */
const MAX_JPEG_SEGMENTS = 1024;

function u16be(b: Uint8Array, i: number): number {
  return (b[i]! << 8) | b[i + 1]!;
}
function u16le(b: Uint8Array, i: number): number {
  return b[i]! | (b[i + 1]! << 8);
}
function u24le(b: Uint8Array, i: number): number {
  return b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16);
}
function u32be(b: Uint8Array, i: number): number {
  return ((b[i]! << 24) >>> 0) + ((b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!);
}
function ascii(b: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end && i < b.length; i++) s += String.fromCharCode(b[i]!);
  return s;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function png(head: Uint8Array): ImageHeader | null {
  if (head.length < 24 || ascii(head, 12, 16) !== 'IHDR') return null;
  return { format: 'png', width: u32be(head, 16), height: u32be(head, 20) };
}

function gif(head: Uint8Array): ImageHeader | null {
  if (head.length < 10) return null;
  return { format: 'gif', width: u16le(head, 6), height: u16le(head, 8) };
}

function webp(head: Uint8Array): ImageHeader | null {
  if (head.length < 30) return null;
  const chunk = ascii(head, 12, 16);
  if (chunk === 'VP8 ') {
    // Frame tag (3 bytes), then the key frame's start code 9d 01 2a, then 14-bit width and height.
    if (head[23] !== 0x9d || head[24] !== 0x01 || head[25] !== 0x2a) return null;
    return { format: 'webp', width: u16le(head, 26) & 0x3fff, height: u16le(head, 28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (head[20] !== 0x2f) return null;
    const bits = head[21]! | (head[22]! << 8) | (head[23]! << 16) | (head[24]! << 24);
    return { format: 'webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') return { format: 'webp', width: u24le(head, 24) + 1, height: u24le(head, 27) + 1 };
  return null;
}

/** Start-of-frame markers: C0–CF except DHT (C4), JPG (C8) and DAC (CC). */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function jpeg(source: ByteSource): ImageHeader | null {
  let offset = 2;
  for (let hops = 0; hops < MAX_JPEG_SEGMENTS; hops++) {
    const at = source.read(offset, 9);
    if (at.length < 4 || at[0] !== 0xff) return null;
    const marker = at[1]!;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2; // standalone markers carry no length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // end of image, or scan data before any frame
    const length = u16be(at, 2);
    if (length < 2) return null;
    if (isStartOfFrame(marker)) {
      if (at.length < 9) return null;
      return { format: 'jpeg', height: u16be(at, 5), width: u16be(at, 7) };
    }
    offset += 2 + length;
  }
  return null;
}

/**
 * The format and size an image's header declares, or `null` when the bytes are none of the four
 * formats or their header is cut short or malformed. A declared size is not checked against
 * anything here (see `inspectMedia` for the limits).
 */
export function readImageHeader(source: ByteSource): ImageHeader | null {
  const head = source.read(0, 32);
  if (head.length >= 8 && PNG_SIGNATURE.every((byte, i) => head[i] === byte)) return png(head);
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return jpeg(source);
  const magic = ascii(head, 0, 6);
  if (magic === 'GIF87a' || magic === 'GIF89a') return gif(head);
  if (ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WEBP') return webp(head);
  return null;
}
