import { SessionEventSchema, type SessionEvent, type SessionEventPublisher } from '@compactor/workflow';
import type { RedisClient } from '../redis/connect';

/**
 * How much of a session's event history Redis keeps for clients that reconnect (SSE
 * `Last-Event-ID`): about the last 200 events (a compaction publishes about ten), for ten
 * minutes after the newest. Enough to ride out a deploy or a dropped connection; Redis holds
 * this for every session active in those minutes (about 3 KB for ten events), so it stays short.
 */
export const EVENT_HISTORY = { length: 200, ttlSeconds: 600 } as const;

/** Subscribes to one session's events from any process. */
export interface SessionEventSource {
  /** Calls `listener` for each event of the session until the returned function is called. */
  subscribe(sessionPk: number, listener: (event: SessionEvent) => void): Promise<() => void>;
  /** The session's events published after `afterId` that the history still holds, oldest first. */
  since(sessionPk: number, afterId: string): Promise<SessionEvent[]>;
  close(): Promise<void>;
}

export const eventChannel = (prefix: string, sessionPk: number) => `${prefix}:events:${sessionPk}`;
/** The session's event history: a capped Redis stream beside the channel (same hash slot). */
export const eventHistoryKey = (prefix: string, sessionPk: number) => `${prefix}:event-history:${sessionPk}`;

/**
 * Appends an event to the session's history (which gives it its id), keeps the history short
 * and alive, and publishes it with that id on the session's channel: one round trip instead of
 * three (a worker publishes about six events per compaction). The channel is an argument, not a
 * key; it carries the same hash tag as the history, so the script also runs on Redis Cluster.
 */
const PUBLISH_EVENT_SCRIPT = `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'event', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[4], string.sub(ARGV[3], 1, -2) .. ',"id":"' .. id .. '"}')
return id`;

/**
 * Publishes an event: appended to the session's history (which gives it its id), then sent with
 * Redis PUBLISH on the session's channel, so every API replica's subscribers get it.
 */
export function redisEventPublisher(
  redis: Pick<RedisClient, 'eval'>,
  prefix: string,
  onError: (error: Error) => void = () => undefined,
): SessionEventPublisher {
  return {
    async publish(event) {
      try {
        const { id: _unset, ...stored } = event;
        // Stored without an id; the script adds it to the published copy (an object, so its
        // text ends with the closing brace the script replaces).
        await redis.eval(
          PUBLISH_EVENT_SCRIPT,
          1,
          eventHistoryKey(prefix, event.sessionPk),
          String(EVENT_HISTORY.length),
          String(EVENT_HISTORY.ttlSeconds),
          JSON.stringify(stored),
          eventChannel(prefix, event.sessionPk),
        );
      } catch (error) {
        onError(error as Error);
      }
    },
  };
}

/** Orders two history ids (`<ms>-<n>`): negative when `a` is older. */
export function compareEventIds(a: string, b: string): number {
  const [aMs = 0n, aSeq = 0n] = a.split('-').map(BigInt);
  const [bMs = 0n, bSeq = 0n] = b.split('-').map(BigInt);
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  return aSeq === bSeq ? 0 : aSeq < bSeq ? -1 : 1;
}

/** A history id as a client may send it back (`Last-Event-ID`); anything else is ignored. */
export const EVENT_ID_PATTERN = /^\d{1,20}-\d{1,20}$/;

/**
 * One Redis subscriber connection per process, shared by every listener: a channel is
 * subscribed while it has listeners and unsubscribed when its last one leaves.
 * `subscriber` must be a dedicated connection (a subscribed connection can do nothing else);
 * `reader`, a normal one, reads the history for reconnecting clients (none: no history).
 */
export function redisEventSource(
  subscriber: RedisClient,
  prefix: string,
  reader: Pick<RedisClient, 'xrange'> | null = null,
): SessionEventSource {
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
    async since(sessionPk, afterId) {
      if (!reader || !EVENT_ID_PATTERN.test(afterId)) return [];
      const entries = await reader.xrange(
        eventHistoryKey(prefix, sessionPk),
        `(${afterId}`,
        '+',
        'COUNT',
        EVENT_HISTORY.length,
      );
      return entries.flatMap(([id, fields]) => {
        const parsed = SessionEventSchema.safeParse(safeJson(fields[1] ?? ''));
        return parsed.success ? [{ ...parsed.data, id }] : [];
      });
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
