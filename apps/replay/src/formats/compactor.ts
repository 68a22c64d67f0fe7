/**
 * The API's own message format: `{ "messages": [...] }` per line (the demo's and the shared
 * sessions' files). The API validates every field when the replay appends; this checks the shape
 * the replay itself relies on, so a bad line is named before anything is sent.
 */
import type { MessageInput } from '@compactor/db';
import { isObject, TranscriptError } from '../transcript';

const ROLES = new Set(['user', 'assistant', 'system']);

/** Whether a value is a list of API messages (each with `role` and `parts`). */
export function isApiMessages(value: unknown): value is unknown[] {
  return (
    Array.isArray(value) && value.length > 0 && value.every((m) => isObject(m) && Array.isArray(m.parts))
  );
}

export function apiMessages(messages: readonly unknown[], file: string, line: number | null): MessageInput[] {
  return messages.map((message, index) => {
    const fail = (detail: string) => new TranscriptError(file, line, `message ${index}: ${detail}`);
    if (!isObject(message)) throw fail('not an object');
    if (typeof message.role !== 'string' || !ROLES.has(message.role)) {
      throw fail(`"role" must be user, assistant or system, got ${JSON.stringify(message.role)}`);
    }
    if (!Array.isArray(message.parts)) throw fail('"parts" is not an array');
    message.parts.forEach((part, p) => {
      if (!isObject(part) || typeof part.type !== 'string') throw fail(`part ${p} has no "type"`);
    });
    // Ids are the replay's own (m1, m2, …): a file's ids may repeat across its sessions.
    const { id: _id, ...rest } = message;
    return { ...(rest as unknown as MessageInput), id: `m${index + 1}` };
  });
}
