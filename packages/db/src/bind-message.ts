/**
 * A parameter at least this large is written to the socket as it is, beside the Bind message's
 * other bytes, instead of being copied into one buffer with them: node-postgres copies every
 * value into its message, which for a 31 MiB batch held the event loop for 100–350 ms.
 */
const LARGE_VALUE_BYTES = 64 * 1024;

const BIND = 0x42; // 'B'
const TEXT_FORMAT = 0;
const BINARY_FORMAT = 1;

/**
 * The Bind message of `statement` with `values` (as pg's `prepareValue` left them: null, a
 * string, or a Buffer sent in binary format), as pieces to write in order, large Buffers among
 * them uncopied; null when no value is large (pg's own `bind` serves those). Byte for byte what
 * pg-protocol's `bind` writes for the unnamed portal with text results.
 */
export function bindMessagePieces(statement: string, values: unknown[]): Buffer[] | null {
  if (!values.some((value) => value instanceof Buffer && value.length >= LARGE_VALUE_BYTES)) return null;
  const pieces: Buffer[] = [];
  let small: Buffer[] = [];
  const flushSmall = () => {
    if (small.length > 0) pieces.push(Buffer.concat(small));
    small = [];
  };
  const int16 = (n: number) => {
    const bytes = Buffer.allocUnsafe(2);
    bytes.writeInt16BE(n);
    return bytes;
  };
  const int32 = (n: number) => {
    const bytes = Buffer.allocUnsafe(4);
    bytes.writeInt32BE(n);
    return bytes;
  };
  // Type and length (filled in below), the unnamed portal, the statement.
  const head = Buffer.allocUnsafe(5);
  head[0] = BIND;
  small.push(head, Buffer.from('\0'), Buffer.from(`${statement}\0`, 'utf8'));
  small.push(int16(values.length));
  for (const value of values) small.push(int16(value instanceof Buffer ? BINARY_FORMAT : TEXT_FORMAT));
  small.push(int16(values.length));
  for (const value of values) {
    if (value === null || value === undefined) {
      small.push(int32(-1));
    } else if (value instanceof Buffer) {
      small.push(int32(value.length));
      if (value.length >= LARGE_VALUE_BYTES) {
        flushSmall();
        pieces.push(value);
      } else small.push(value);
    } else {
      const text = Buffer.from(String(value), 'utf8');
      small.push(int32(text.length), text);
    }
  }
  // One result format code for every column: text.
  small.push(int16(1), int16(TEXT_FORMAT));
  flushSmall();
  const length = pieces.reduce((sum, piece) => sum + piece.length, 0) - 1;
  pieces[0]!.writeInt32BE(length, 1);
  return pieces;
}
