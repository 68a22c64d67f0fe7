import { z } from 'zod';
import { SESSION_EVENT_TYPES } from '@compactor/contract';

// The event types are the wire contract's: what workers publish is what the API documents.
export { SESSION_DELETED_EVENT, SESSION_EVENT_TYPES, type SessionEventType } from '@compactor/contract';

/**
 * One event: its type, the session (public id), the compaction it concerns (null for a prune
 * job), when, and plain numbers and labels — never message text.
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
  publish(event: SessionEvent): Promise<void>;
}

/** A publisher that drops every event (tests, scripts). */
export const noEvents: SessionEventPublisher = { publish: async () => undefined };
