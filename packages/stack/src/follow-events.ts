/**
 * A session's events handed to a callback, for tools that wait on them while they append (the
 * demo, the replay): `client.events` of @compactor/client, started before the first append.
 */
import type { CompactorClient, SessionEventMessage } from '@compactor/client';

export interface FollowedEvents {
  /** Stops following (the connection closes). */
  close(): void;
  /** Resolves when following ends: null once closed, else why the stream gave up. */
  ended: Promise<Error | null>;
}

/**
 * Calls `onEvent` with each of the session's events. Resolves once the API has confirmed the
 * subscription, so no event published after that is missed; rejects when the stream cannot be
 * opened (an unknown session, a wrong key). A broken stream reconnects as the client's
 * `events` does (resuming with `Last-Event-ID`).
 */
export async function followEvents(
  client: CompactorClient,
  sessionId: string,
  onEvent: (event: SessionEventMessage) => void,
): Promise<FollowedEvents> {
  const abort = new AbortController();
  let subscribed: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (subscribed = resolve));
  const following = (async () => {
    for await (const event of client.events(sessionId, { signal: abort.signal, onOpen: () => subscribed() }))
      onEvent(event);
  })();
  await Promise.race([opened, following]);
  const ended = following.then(
    () => null,
    (error: unknown) => (abort.signal.aborted ? null : (error as Error)),
  );
  return { close: () => abort.abort(), ended };
}
