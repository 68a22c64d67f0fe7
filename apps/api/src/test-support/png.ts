/**
 * A PNG's signature and IHDR chunk of `width × height`, then `padding` bytes of `fill` (no real
 * pixels): enough for the media checks to read its dimensions. The fill keeps images of the same
 * size apart where a test needs distinct objects.
 */
export function pngBytes(width: number, height: number, padding = 64, fill = 9): Buffer {
  const bytes = Buffer.alloc(33 + padding, fill);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write('IHDR', 12, 'ascii');
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return bytes;
}

/** {@link pngBytes} as a `data:` URL. */
export function pngDataUrl(width: number, height: number, padding?: number, fill?: number): string {
  return `data:image/png;base64,${pngBytes(width, height, padding, fill).toString('base64')}`;
}
