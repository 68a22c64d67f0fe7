/**
 * The hash chain that recognises a conversation across requests: each element's hash covers its
 * own canonical form and every element before it, so two requests share a hash at position i
 * exactly when their first i + 1 elements are equivalent.
 */
// A hash is a pure function of its input; node:crypto's is the only synchronous SHA-256 in Node
// (Web Crypto's digest is async), and the chain is computed once per element of every request.
// eslint-disable-next-line no-restricted-imports
import { createHash } from 'node:crypto';

/** Deeper than any canonical form can be: tool inputs are refused past 64 levels before they get here. */
const MAX_CANONICAL_DEPTH = 128;

/**
 * JSON with object keys sorted at every depth and `undefined` fields left out, so equal content
 * always serialises equal (the same rules as @compactor/db's `canonicalJson`). Throws past
 * {@link MAX_CANONICAL_DEPTH} levels instead of exhausting the stack.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value, 0));
}

function sortKeys(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_CANONICAL_DEPTH)
    throw new RangeError(`canonicalJson: nested deeper than ${MAX_CANONICAL_DEPTH}`);
  if (Array.isArray(value)) return value.map((item) => sortKeys(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, item]) => [key, sortKeys(item, depth + 1)]),
  );
}

/** `h[-1]`: 32 zero bytes. */
const CHAIN_START = Buffer.alloc(32);

/**
 * `h[i] = sha256(h[i-1] bytes ‖ canonicalJson(canonical))` as hex; `previous` is `h[i-1]` in hex,
 * or null for the first element.
 */
export function chainHash(previous: string | null, canonical: unknown): string {
  return createHash('sha256')
    .update(previous === null ? CHAIN_START : Buffer.from(previous, 'hex'))
    .update(canonicalJson(canonical), 'utf8')
    .digest('hex');
}
