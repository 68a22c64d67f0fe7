/**
 * A conversation's elements computed again for its next request without canonicalising and
 * hashing the history it repeats: an agent sends its whole message list every turn, and all but
 * the newest few messages are the ones its previous request sent. A message equal (as parsed
 * JSON) to the one at the same index of the previous request, after a prefix that is equal too,
 * has the same element: an element is a pure function of its message, its index and the element
 * before it. Only the rest is drafted and hashed.
 */
import { chainElement, type ConversationElement, type ElementDraft } from './elements';

/** A request's inputs (parsed JSON, never mutated) and the elements they gave. */
export interface ElementMemo {
  inputs: readonly unknown[];
  elements: readonly ConversationElement[];
  /** `weights[i]`: the approximate size of inputs 0..i together ({@link jsonWeight}). */
  weights: readonly number[];
}

/**
 * The elements of `inputs` (`draftOf(input, index)` each), the longest prefix equal to `memo`'s
 * inputs taken from `memo`; and the memo of this request. `reused`: how many were taken.
 */
export function chainElementsReusing(
  inputs: readonly unknown[],
  draftOf: (input: unknown, index: number) => ElementDraft,
  memo: ElementMemo | null,
): { elements: ConversationElement[]; memo: ElementMemo; reused: number } {
  let reused = 0;
  if (memo !== null) {
    const bound = Math.min(inputs.length, memo.inputs.length);
    while (reused < bound && jsonEqual(inputs[reused], memo.inputs[reused])) reused++;
  }
  const elements = memo === null ? [] : memo.elements.slice(0, reused);
  const weights = memo === null ? [] : memo.weights.slice(0, reused);
  let previous: Uint8Array | null = reused > 0 ? Buffer.from(elements[reused - 1]!.hash, 'hex') : null;
  let weight = reused > 0 ? weights[reused - 1]! : 0;
  for (let position = reused; position < inputs.length; position++) {
    const { element, digest } = chainElement(position, draftOf(inputs[position], position), previous);
    previous = digest;
    elements.push(element);
    weight += jsonWeight(inputs[position]);
    weights.push(weight);
  }
  return { elements, memo: { inputs, elements, weights }, reused };
}

/** Deepest nesting compared; deeper inputs count as unequal (drafted again, never wrong). */
const MAX_EQUAL_DEPTH = 128;

/** Whether two parsed JSON values are equal: same types, array items, keys and values (key order aside). */
export function jsonEqual(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (depth >= MAX_EQUAL_DEPTH) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i], depth + 1)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(right, key)) return false;
    if (!jsonEqual(left[key], right[key], depth + 1)) return false;
  }
  return true;
}

/** About the characters a parsed JSON value serialises to: what keeping it in a memo costs. */
export function jsonWeight(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object' || depth >= MAX_EQUAL_DEPTH) return 8;
  let weight = 2;
  if (Array.isArray(value)) {
    for (const item of value) weight += 1 + jsonWeight(item, depth + 1);
    return weight;
  }
  for (const [key, item] of Object.entries(value)) weight += key.length + 4 + jsonWeight(item, depth + 1);
  return weight;
}
