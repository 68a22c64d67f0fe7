import type { SessionRow } from '@compactor/db';
import { compareEventIds, EVENT_ID_PATTERN } from '@compactor/queue';
import { SESSION_DELETED_EVENT, type SessionEvent } from '@compactor/workflow';
import { EventsUnavailable, SessionNotFound } from './errors';
import type { OperationLog, SessionResources } from './resources';
import { requireSession, type SessionTarget } from './sessions';

/** How long opening a stream waits for Redis to confirm the subscription. */
const SUBSCRIBE_TIMEOUT_MS = 5000;

/**
 * A session's events for one client, in order and none twice: first what it missed (the
 * history's events after its `Last-Event-ID`), then the live ones; it ends after
 * `session.deleted`, or when {@link close}d. Iterate it once.
 */
export interface SessionEventStream extends AsyncIterable<SessionEvent> {
  readonly session: SessionRow;
  /** Stops the stream: unsubscribes, and ends the iteration at the next event. Idempotent. */
  close(): void;
}

/**
 * Opens a session's event stream (`GET /v1/sessions/:id/events`). Subscribed to the live
 * channel before anything is replayed, so nothing published in between is lost; live events
 * the replay already sent are dropped by id. Throws {@link SessionNotFound} for a missing
 * session (one deleted while the subscription was confirmed included: its `session.deleted`
 * reached nobody here) and {@link EventsUnavailable} when Redis does not confirm in time;
 * nothing stays subscribed then. A history that cannot be read is logged and skipped: the
 * client gets the live events.
 */
export async function openSessionEvents(
  resources: SessionResources,
  target: SessionTarget,
  { lastEventId, log }: { lastEventId: string | string[] | undefined; log: OperationLog },
): Promise<SessionEventStream> {
  const session = await requireSession(resources.db, target.tenantId, target.id);
  const live: SessionEvent[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const unsubscribe = await subscribeInTime(resources, session.pk, (event) => {
    if (closed) return;
    live.push(event);
    wake?.();
  });
  try {
    const current = await requireSession(resources.db, target.tenantId, session.id);
    if (current.pk !== session.pk) throw new SessionNotFound();
  } catch (error) {
    unsubscribe();
    throw error;
  }
  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    wake?.();
  };

  async function* events(): AsyncGenerator<SessionEvent> {
    try {
      const replay = await missedEvents(resources, session.pk, lastEventId).catch((error: unknown) => {
        log.warn({ sessionId: session.id, err: (error as Error).message }, 'event history unavailable');
        return null;
      });
      for (const event of replay?.events ?? []) {
        if (closed) return;
        yield event;
        if (event.type === SESSION_DELETED_EVENT) return;
      }
      const replayedUpTo = replay?.upTo ?? null;
      while (!closed) {
        const event = live.shift();
        if (!event) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        if (replayedUpTo !== null && event.id !== undefined && compareEventIds(event.id, replayedUpTo) <= 0)
          continue;
        yield event;
        if (event.type === SESSION_DELETED_EVENT) return;
      }
    } finally {
      close();
    }
  }

  return { session, close, [Symbol.asyncIterator]: events };
}

/**
 * What a reconnecting client missed: the events after its `Last-Event-ID` that the history still
 * holds, and the id they go up to (`null`: no valid id, nothing to replay).
 */
async function missedEvents(
  resources: SessionResources,
  sessionPk: number,
  lastEventId: string | string[] | undefined,
): Promise<{ events: SessionEvent[]; upTo: string } | null> {
  if (typeof lastEventId !== 'string' || !EVENT_ID_PATTERN.test(lastEventId)) return null;
  const events = await resources.events.since(sessionPk, lastEventId);
  return { events, upTo: events.at(-1)?.id ?? lastEventId };
}

/**
 * Subscribes, or throws {@link EventsUnavailable} when Redis does not confirm in time (and drops
 * a late subscription).
 */
async function subscribeInTime(
  resources: SessionResources,
  sessionPk: number,
  listener: (event: SessionEvent) => void,
): Promise<() => void> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  const subscribed = resources.events.subscribe(sessionPk, listener);
  subscribed.then(
    (unsubscribe) => late && unsubscribe(),
    () => undefined,
  );
  try {
    return await Promise.race([
      subscribed,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(new EventsUnavailable());
        }, SUBSCRIBE_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    late = true;
    if (error instanceof EventsUnavailable) throw error;
    throw new EventsUnavailable();
  } finally {
    clearTimeout(timer);
  }
}
