import type { AppendMessagesRequest } from '@compactor/contract';

/** A fresh client message id: `msg_` and a random UUID (Node 19+, every current browser). */
export function newMessageId(): string {
  return `msg_${globalThis.crypto.randomUUID()}`;
}

/**
 * The batch with an id on every message that has none (`newMessageId`): the API stores a
 * re-posted message once, so the batch can be sent again after a network error or a 503 whose
 * transaction committed before the server gave up on it. Ids the caller set are kept.
 */
export function withMessageIds(
  body: AppendMessagesRequest,
  newId: () => string = newMessageId,
): AppendMessagesRequest {
  if (body.messages.every((message) => message.id !== undefined)) return body;
  return {
    ...body,
    messages: body.messages.map((message) =>
      message.id === undefined ? { ...message, id: newId() } : message,
    ),
  };
}
