import { z } from 'zod';
import {
  SESSION_EVENT_TYPES,
  type CompactionEventType,
  type SessionEventMap,
  type SessionEventType,
} from '@compactor/contract';

// The event types and payloads are the wire contract's: what workers publish is what the API documents.
export {
  SESSION_DELETED_EVENT,
  SESSION_EVENT_TYPES,
  type CompactionEventType,
  type SessionEventMap,
  type SessionEventType,
} from '@compactor/contract';

/**
 * One event as it travels between processes: its type, the session (public id and key), the
 * compaction it concerns (null for a prune job), when, and plain numbers and labels — never
 * message text. `data` stays open here: Redis relays whatever was published, and the contract's
 * `SessionEventPayload` is what types it; producers build events with {@link announceEvent}.
 */
export const SessionEventSchema = z.object({
  type: z.enum(SESSION_EVENT_TYPES),
  sessionPk: z.number().int(),
  sessionId: z.string(),
  compactionId: z.string().nullable(),
  at: z.string(),
  data: z.record(z.string(), z.unknown()),
  /** Its id in the session's event history (a Redis stream id, `<ms>-<n>`), once published. */
  id: z.string().optional(),
});
export type SessionEvent = z.infer<typeof SessionEventSchema>;

/**
 * Publishes session events; best effort (an event lost to a Redis blip is not worth failing a
 * job). `@compactor/queue` has the Redis one that every API replica's subscribers hear.
 */
export interface SessionEventPublisher {
  publish(event: TypedSessionEvent): Promise<void>;
}

/**
 * A {@link SessionEvent} whose `compactionId` and `data` are the contract's for its `type`: what
 * a publisher accepts, so a payload no consumer expects does not compile. What comes back from
 * Redis is the looser {@link SessionEvent}.
 */
export type TypedSessionEvent = {
  [T in SessionEventType]: Omit<SessionEvent, 'type' | 'compactionId' | 'data'> & {
    type: T;
    compactionId: EventCompactionId[T];
    data: SessionEventMap[T];
  };
}[SessionEventType];

/** A publisher that drops every event (tests, scripts). */
export const noEvents: SessionEventPublisher = { publish: async () => undefined };

/** Each event type's `compactionId`: the compaction's id, or null for a prune job and the session's deletion. */
export type EventCompactionId = {
  [T in SessionEventType]: T extends CompactionEventType ? string : null;
};

/** What an event is about: its session, and its compaction for the events that concern one. */
export interface EventSubject<T extends SessionEventType> {
  session: { pk: number; id: string };
  compactionId: EventCompactionId[T];
}

/**
 * The one way workers and the queue publish a session event: `data` must be the contract's
 * payload for `type` (a wrong or missing field does not compile). Resolves when the publisher
 * has it; without a publisher there is nothing to do.
 */
export function announceEvent<T extends SessionEventType>(
  publisher: SessionEventPublisher | undefined,
  at: Date,
  subject: EventSubject<T>,
  type: T,
  data: SessionEventMap[T],
): Promise<void> {
  if (!publisher) return Promise.resolve();
  // The signature ties `data` and `compactionId` to `type`; TypeScript cannot narrow the generic
  // `T` to its member of the union, so the event is built as that member.
  const event = {
    type,
    sessionPk: subject.session.pk,
    sessionId: subject.session.id,
    compactionId: subject.compactionId,
    at: at.toISOString(),
    data,
  } as TypedSessionEvent;
  return publisher.publish(event);
}
