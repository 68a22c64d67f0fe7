import { createHash } from 'node:crypto';

/**
 * The prefix of the ids an append's `Idempotency-Key` gives the messages sent without one:
 * `idem_` and 32 hex digits of a SHA-256 of the tenant, the session and the key, so the same key
 * means the same ids only in the session it was sent to, and the ids say nothing of the key.
 */
export function keyedIdPrefix(tenantId: string, sessionId: string, key: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([tenantId, sessionId, key]))
    .digest('hex');
  return `idem_${digest.slice(0, 32)}`;
}

/**
 * A message of the batch names as its own id one that the key gives another message: storing
 * both under one id is impossible, and which one the client meant is unknowable.
 */
export class KeyedIdTaken extends Error {
  constructor(readonly index: number) {
    super('this id is the one the Idempotency-Key gives another message of the batch');
  }
}

/**
 * The batch with an id on every message: its own, or `<prefix>_<place in the batch>` (no prefix:
 * the batch as it is, and the store picks random ids). Sent again with the same key, the same
 * batch gets the same ids, so it is a re-post; throws {@link KeyedIdTaken} when a message's own
 * id is one the key gives another.
 */
export function withKeyedIds<Message extends { id?: string | undefined }>(
  messages: Message[],
  prefix: string | undefined,
): Message[] {
  if (prefix === undefined || messages.every((message) => message.id !== undefined)) return messages;
  const own = new Map<string, number>();
  messages.forEach((message, index) => {
    if (message.id !== undefined) own.set(message.id, index);
  });
  return messages.map((message, index) => {
    if (message.id !== undefined) return message;
    const id = `${prefix}_${index}`;
    const taken = own.get(id);
    if (taken !== undefined) throw new KeyedIdTaken(taken);
    return { ...message, id };
  });
}
