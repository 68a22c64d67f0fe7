/**
 * The hash chain that recognises a conversation across requests: each element's hash covers its
 * own canonical form and every element before it, so two requests share a hash at position i
 * exactly when their first i + 1 elements are equivalent.
 */
// A hash is a pure function of its input; node:crypto's is the only synchronous SHA-256 in Node
// (Web Crypto's digest is async), and the chain is computed once per element of every request.
// eslint-disable-next-line no-restricted-imports
import { hash } from 'node:crypto';

/** Deeper than any canonical form can be: tool inputs are refused past 64 levels before they get here. */
const MAX_CANONICAL_DEPTH = 128;

/**
 * JSON with object keys sorted at every depth and `undefined` fields left out, so equal content
 * always serialises equal (the same rules as @compactor/db's `canonicalJson`). Throws past
 * {@link MAX_CANONICAL_DEPTH} levels instead of exhausting the stack.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalOrder(value, 0));
}

/**
 * `value` with its objects' keys in sorted order: the value itself where it already is (the
 * element readers build their canonical forms in that order, so the usual case allocates nothing
 * and the native serialiser does the rest), copies only along the paths that are not.
 */
function canonicalOrder(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_CANONICAL_DEPTH)
    throw new RangeError(`canonicalJson: nested deeper than ${MAX_CANONICAL_DEPTH}`);
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const ordered = canonicalOrder(item, depth + 1);
      if (copy === null && ordered !== item) copy = value.slice(0, i);
      copy?.push(ordered);
    }
    return copy ?? value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1]! < keys[i]!;
  const prototype: unknown = Object.getPrototypeOf(value);
  // Anything but a plain object (a Date, a Map) is read as its own enumerable fields: a copy.
  const plain = prototype === Object.prototype || prototype === null;
  const order = sorted ? keys : [...keys].sort(compareKeys);
  // The ordered values, once one of them differs from the object's own (`undefined` fields are
  // left out by the serialiser itself).
  let values: unknown[] | null = sorted && plain ? null : [];
  for (let i = 0; i < order.length; i++) {
    const item = record[order[i]!];
    const ordered = canonicalOrder(item, depth + 1);
    if (values === null && ordered !== item) values = order.slice(0, i).map((key) => record[key]);
    values?.push(ordered);
  }
  if (values === null) return value;
  const copy = values;
  return Object.fromEntries(
    order.flatMap((key, i) => (copy[i] === undefined ? [] : [[key, copy[i]] as const])),
  );
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `h[-1]`: 32 zero bytes. */
const CHAIN_START = Buffer.alloc(32);

/**
 * `h[i] = sha256(h[i-1] bytes ‖ canonicalJson(canonical))` as hex; `previous` is `h[i-1]` in hex,
 * or null for the first element.
 */
export function chainHash(previous: string | null, canonical: unknown): string {
  return chainDigest(previous === null ? CHAIN_START : Buffer.from(previous, 'hex'), canonical).toString(
    'hex',
  );
}

/** {@link chainHash} on raw bytes: `h[i-1]` in, `h[i]` out, for walking a whole list without hex round trips. */
export function chainDigest(previous: Uint8Array | null, canonical: unknown): Buffer {
  const json = canonicalJson(canonical);
  // One one-shot digest over `h[i-1] ‖ json` written into one buffer: a streaming hash object
  // per element costs more than hashing the element itself.
  const room = HASH_INPUT_OFFSET + json.length * 3;
  const input = room <= MAX_SCRATCH_BYTES ? scratchOf(room) : Buffer.allocUnsafe(room);
  input.set(previous ?? CHAIN_START, 0);
  const written = input.write(json, HASH_INPUT_OFFSET, 'utf8');
  return hash('sha256', input.subarray(0, HASH_INPUT_OFFSET + written), 'buffer');
}

/** Where the canonical JSON starts in a digest's input: after the 32 bytes of `h[i-1]`. */
const HASH_INPUT_OFFSET = 32;

/**
 * The largest input kept between digests (a UTF-16 unit is at most 3 UTF-8 bytes, so room for
 * ~340k characters); a larger element gets a buffer of its own, dropped after its digest.
 */
const MAX_SCRATCH_BYTES = 1 << 20;

let scratch = Buffer.allocUnsafe(1 << 14);

/** The reused input buffer, grown to `bytes` (synchronous use only: nothing awaits in between). */
function scratchOf(bytes: number): Buffer {
  if (scratch.length < bytes) scratch = Buffer.allocUnsafe(Math.min(MAX_SCRATCH_BYTES, bytes * 2));
  return scratch;
}
