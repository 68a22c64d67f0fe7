/** Image headers of a given size, for tests: enough bytes for the header, no pixel data. */

function u32be(n: number): number[] {
  return [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
}
function u16le(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff];
}
function u24le(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff];
}
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

/** A PNG's signature and IHDR chunk (CRC zeroed), then `padding` zero bytes. */
export function pngHeader(width: number, height: number, padding = 0): Uint8Array {
  return new Uint8Array([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    ...u32be(13),
    ...ascii('IHDR'),
    ...u32be(width),
    ...u32be(height),
    8,
    6,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    ...new Array<number>(padding).fill(0),
  ]);
}

/** A JPEG: SOI, an APP1 segment of `appBytes`, then a baseline frame header. */
export function jpegHeader(width: number, height: number, appBytes = 16): Uint8Array {
  const app = [
    0xff,
    0xe1,
    (appBytes + 2) >> 8,
    (appBytes + 2) & 0xff,
    ...new Array<number>(appBytes).fill(0x41),
  ];
  const sof = [
    0xff,
    0xc0,
    0,
    17,
    8,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    3,
    ...new Array<number>(9).fill(0),
  ];
  return new Uint8Array([0xff, 0xd8, ...app, 0xff, 0xff, ...sof, 0xff, 0xd9]);
}

/** A GIF's header and logical screen descriptor. */
export function gifHeader(width: number, height: number): Uint8Array {
  return new Uint8Array([...ascii('GIF89a'), ...u16le(width), ...u16le(height), 0, 0, 0, 0x3b]);
}

/** A WebP's RIFF header and first chunk, lossy (`VP8 `), lossless (`VP8L`) or extended (`VP8X`). */
export function webpHeader(width: number, height: number, chunk: 'VP8 ' | 'VP8L' | 'VP8X'): Uint8Array {
  const head = [...ascii('RIFF'), 0, 0, 0, 0, ...ascii('WEBP'), ...ascii(chunk), 0, 0, 0, 0];
  let body: number[];
  if (chunk === 'VP8 ') body = [0, 0, 0, 0x9d, 0x01, 0x2a, ...u16le(width), ...u16le(height)];
  else if (chunk === 'VP8L') {
    const bits = ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14);
    body = [0x2f, bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, (bits >>> 24) & 0xff];
  } else body = [0, 0, 0, 0, ...u24le(width - 1), ...u24le(height - 1)];
  return new Uint8Array([...head, ...body, ...new Array<number>(8).fill(0)]);
}

/** A base64 `data:` URL of `bytes`. */
export function dataUrl(mime: string, bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `data:${mime};base64,${btoa(binary)}`;
}
