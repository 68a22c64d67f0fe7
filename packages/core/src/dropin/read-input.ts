/**
 * Readers for untrusted request bodies: each checks one shape at one path and throws a
 * {@link DropInInputError} naming it, so the element builders read like the wire format.
 */
import { CALL_ID_PATTERN, jsonProblem, textProblem, TOOL_NAME_PATTERN } from '@compactor/contract';
import { DropInInputError } from './input-error';

export type Path = readonly (string | number)[];
export type Json = Record<string, unknown>;

export function isRecord(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function record(value: unknown, path: Path): Json {
  if (!isRecord(value)) throw new DropInInputError(path, 'must be an object');
  return value;
}

export function array(value: unknown, path: Path): unknown[] {
  if (!Array.isArray(value)) throw new DropInInputError(path, 'must be an array');
  return value;
}

/** A string Postgres stores as sent (no NUL, no lone surrogate). */
export function text(value: unknown, path: Path): string {
  if (typeof value !== 'string') throw new DropInInputError(path, 'must be a string');
  const problem = textProblem(value);
  if (problem !== null) throw new DropInInputError(path, problem);
  return value;
}

/** `value` as {@link text}, or undefined when absent or null (clients send both for "none"). */
export function optionalText(value: unknown, path: Path): string | undefined {
  return value === undefined || value === null ? undefined : text(value, path);
}

/**
 * A free-form JSON value (tool input, a kept block) storable as sent: at most 64 levels deep
 * counted from the stored document's root, `depth` levels above `value`.
 */
export function storableJson(value: unknown, path: Path, depth = 0): unknown {
  const problem = jsonProblem(value, depth);
  if (problem !== null) throw new DropInInputError([...path, ...problem.path], problem.message);
  return value;
}

/** A tool-call id the store accepts (see the contract's CALL_ID_PATTERN). */
export function callId(value: unknown, path: Path): string {
  const id = text(value, path);
  if (!CALL_ID_PATTERN.test(id)) {
    throw new DropInInputError(path, 'a tool call id is 1-200 printable characters, without whitespace');
  }
  return id;
}

/** A tool name the store accepts (see the contract's TOOL_NAME_PATTERN). */
export function toolName(value: unknown, path: Path): string {
  const name = text(value, path);
  if (!TOOL_NAME_PATTERN.test(name)) {
    throw new DropInInputError(path, 'a tool name is 1-64 of A-Z a-z 0-9 _ - . :');
  }
  return name;
}

/** The contract's limit on one message's parts: more would be refused by the append, after other writes. */
export const MAX_PARTS_PER_MESSAGE = 5000;

/** Refuses a message with more parts than one append takes. */
export function boundedParts<T>(parts: T[], path: Path): T[] {
  if (parts.length > MAX_PARTS_PER_MESSAGE) {
    throw new DropInInputError(path, `a message holds at most ${MAX_PARTS_PER_MESSAGE} blocks`);
  }
  return parts;
}

/** The media type of a `data:` URL, or null for any other URL. */
export function dataUrlMime(url: string): string | null {
  const match = /^data:([\w.+-]+\/[\w.+-]+)[;,]/i.exec(url);
  return match ? match[1]!.toLowerCase() : null;
}
