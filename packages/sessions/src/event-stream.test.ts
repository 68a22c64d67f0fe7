import { describe, expect, it } from 'vitest';
import { deleteSession, type Db } from '@compactor/db';
import { compareEventIds, type SessionEventSource } from '@compactor/queue';
import { insertTestSession, useTestDatabase } from '@compactor/db/testing';
import type { SessionEvent } from '@compactor/workflow';
import { EventsUnavailable, SessionNotFound } from './errors';
import { openSessionEvents } from './event-stream';
import type { SessionResources } from './resources';

const database = useTestDatabase();

/** An event of the session as Redis relays it. */
const event = (sessionPk: number, id: string, type = 'compaction.started'): SessionEvent =>
  ({
    type,
    sessionPk,
    sessionId: 's',
    compactionId: null,
    at: '2026-01-05T10:00:00.000Z',
    data: {},
    id,
  }) as SessionEvent;

/** A live channel the test publishes on, and a history that holds `history` (or fails). */
function fakeEvents(history: SessionEvent[] | Error) {
  const listeners = new Set<(event: SessionEvent) => void>();
  const source: SessionEventSource = {
    subscribe: async (_pk, listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    since: async (_pk, afterId) => {
      if (history instanceof Error) throw history;
      return history.filter((e) => compareEventIds(e.id!, afterId) > 0);
    },
    close: async () => undefined,
  };
  return { source, listeners, publish: (e: SessionEvent) => listeners.forEach((l) => l(e)) };
}

const resourcesWith = (db: Db, events: SessionEventSource) => ({ db, events }) as unknown as SessionResources;

const warnings: string[] = [];
const log = { warn: (_fields: Record<string, unknown>, message: string) => void warnings.push(message) };

describe('openSessionEvents', () => {
  it('replays what the client missed, then the live events none twice, and ends after session.deleted', async () => {
    const session = await insertTestSession(database.db, { tenantId: 't' });
    const events = fakeEvents([event(session.pk, '10-0'), event(session.pk, '11-0')]);
    const stream = await openSessionEvents(
      resourcesWith(database.db, events.source),
      { tenantId: 't', id: session.id },
      { lastEventId: '9-0', log },
    );
    // Published while the client reconnects: 11-0 is also in the history, 12-0 only live.
    events.publish(event(session.pk, '11-0'));
    events.publish(event(session.pk, '12-0'));
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of stream) seen.push(`${e.id} ${e.type}`);
    })();
    await new Promise((resolve) => setImmediate(resolve));
    events.publish(event(session.pk, '13-0', 'session.deleted'));
    events.publish(event(session.pk, '14-0'));
    await reading;
    expect(seen).toEqual([
      '10-0 compaction.started',
      '11-0 compaction.started',
      '12-0 compaction.started',
      '13-0 session.deleted',
    ]);
    // Ended: unsubscribed.
    expect(events.listeners.size).toBe(0);
  });

  it('sends the live events when the history cannot be read, and stops at close', async () => {
    const session = await insertTestSession(database.db, { tenantId: 't' });
    const events = fakeEvents(new Error('redis down'));
    const stream = await openSessionEvents(
      resourcesWith(database.db, events.source),
      { tenantId: 't', id: session.id },
      { lastEventId: '5-0', log },
    );
    events.publish(event(session.pk, '3-0'));
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of stream) {
        seen.push(e.id!);
        stream.close();
      }
    })();
    await reading;
    expect(seen).toEqual(['3-0']);
    expect(warnings).toContain('event history unavailable');
    expect(events.listeners.size).toBe(0);
  });

  it('is SessionNotFound with nothing left subscribed for a session missing or deleted while it subscribed', async () => {
    const events = fakeEvents([]);
    const resources = resourcesWith(database.db, events.source);
    await expect(
      openSessionEvents(resources, { tenantId: 't', id: 'nope' }, { lastEventId: undefined, log }),
    ).rejects.toBeInstanceOf(SessionNotFound);

    const session = await insertTestSession(database.db, { tenantId: 't' });
    const deleting: SessionEventSource = {
      ...events.source,
      subscribe: async (pk, listener) => {
        const unsubscribe = await events.source.subscribe(pk, listener);
        await deleteSession(database.db, session.pk);
        return unsubscribe;
      },
    };
    const refused = await openSessionEvents(
      resourcesWith(database.db, deleting),
      { tenantId: 't', id: session.id },
      { lastEventId: undefined, log },
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionNotFound);
    expect(events.listeners.size).toBe(0);
  });

  it('is EventsUnavailable when the live channel refuses the subscription', async () => {
    const session = await insertTestSession(database.db, { tenantId: 't' });
    const refusing: SessionEventSource = {
      ...fakeEvents([]).source,
      subscribe: () => Promise.reject(new Error('Connection is closed.')),
    };
    const refused = await openSessionEvents(
      resourcesWith(database.db, refusing),
      { tenantId: 't', id: session.id },
      { lastEventId: undefined, log },
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EventsUnavailable);
    expect((refused as Error).message).toBe('the event stream is unavailable (Redis)');
  });
});
