import type { Redis } from 'ioredis';
import { z } from 'zod';

/** Every event type a session's stream carries (API.md "Events"). */
export const SESSION_EVENT_TYPES = [
  'compaction.requested',
  'compaction.started',
  'compaction.step',
  'compaction.completed',
  'compaction.failed',
  'compaction.skipped',
  'session.compacted',
  'prune.completed',
] as const;
export type SessionEventType = (typeof SESSION_EVENT_TYPES)[number];

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
});
export type SessionEvent = z.infer<typeof SessionEventSchema>;

/** Publishes session events; best effort (an event lost to a Redis blip is not worth failing a job). */
export interface SessionEventPublisher {
  publish(event: SessionEvent): Promise<void>;
}

/** Subscribes to one session's events from any process. */
export interface SessionEventSource {
  /** Calls `listener` for each event of the session until the returned function is called. */
  subscribe(sessionPk: number, listener: (event: SessionEvent) => void): Promise<() => void>;
  close(): Promise<void>;
}

export const eventChannel = (prefix: string, sessionPk: number) => `${prefix}:events:${sessionPk}`;

/** Publishes with Redis PUBLISH on the session's channel: every API replica's subscribers get it. */
export function redisEventPublisher(
  redis: Pick<Redis, 'publish'>,
  prefix: string,
  onError: (error: Error) => void = () => undefined,
): SessionEventPublisher {
  return {
    async publish(event) {
      try {
        await redis.publish(eventChannel(prefix, event.sessionPk), JSON.stringify(event));
      } catch (error) {
        onError(error as Error);
      }
    },
  };
}

/**
 * One Redis subscriber connection per process, shared by every listener: a channel is
 * subscribed while it has listeners and unsubscribed when its last one leaves.
 * `subscriber` must be a dedicated connection (a subscribed connection can do nothing else).
 */
export function redisEventSource(subscriber: Redis, prefix: string): SessionEventSource {
  const listeners = new Map<string, Set<(event: SessionEvent) => void>>();
  // A channel's SUBSCRIBE in flight: later listeners wait for it too, so none returns before
  // Redis confirms (events published in between would be lost to it).
  const pending = new Map<string, Promise<unknown>>();
  subscriber.on('message', (channel: string, message: string) => {
    const set = listeners.get(channel);
    if (!set) return;
    const parsed = SessionEventSchema.safeParse(safeJson(message));
    if (!parsed.success) return;
    for (const listener of set) listener(parsed.data);
  });
  return {
    async subscribe(sessionPk, listener) {
      const channel = eventChannel(prefix, sessionPk);
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        const subscribed = subscriber.subscribe(channel).finally(() => pending.delete(channel));
        pending.set(channel, subscribed);
      }
      set.add(listener);
      await pending.get(channel);
      return () => {
        const current = listeners.get(channel);
        if (!current) return;
        current.delete(listener);
        if (current.size === 0) {
          listeners.delete(channel);
          void subscriber.unsubscribe(channel).catch(() => undefined);
        }
      };
    },
    async close() {
      listeners.clear();
      subscriber.disconnect();
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Drops every event (tests and scripts that do not follow progress). */
export const noEvents: SessionEventPublisher = { publish: async () => undefined };
