import { SESSION_DELETED_EVENT, SessionEventPayload, type SessionEventMessage } from '@compactor/contract';
import { CompactorApiError } from './errors.js';
import { mayRetry, parseRetryAfter, retryDelayMs, sleep } from './retry.js';
import { readSse } from './sse.js';
import { baseHeaders, callUrl, type TransportSettings } from './transport.js';

/** How {@link CompactorClient.events} follows a session. */
export interface EventsOptions {
  /** Ends the iteration (the loop then finishes without an error). */
  signal?: AbortSignal;
  /**
   * Reconnect when the stream breaks or the server ends it (a deploy, a proxy timeout), with the
   * retry backoff; default true. The iteration ends after `session.deleted` either way. The reconnect sends `Last-Event-ID`, and the API first replays
   * what was published meanwhile (as long as its history holds it: the session's last 200
   * events, for ten minutes).
   */
  reconnect?: boolean;
  /** Called each time the API confirms the subscription (`: connected`): events from then on arrive. */
  onOpen?: () => void;
}

/**
 * The session's events as an async iterator, reconnecting as {@link EventsOptions} says. Breaking
 * out of the `for await` loop closes the connection.
 */
export async function* sessionEvents(
  settings: TransportSettings,
  sessionId: string,
  options: EventsOptions = {},
): AsyncGenerator<SessionEventMessage> {
  const path = `/v1/sessions/${encodeURIComponent(sessionId)}/events`;
  const reconnect = options.reconnect ?? true;
  const abort = new AbortController();
  const stop = () => abort.abort();
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) stop();
  // Set by the parser's callbacks (`as`: keeps TypeScript from narrowing them to null here).
  let lastEventId = null as string | null;
  let serverRetryMs = null as number | null;
  let failures = 0;
  try {
    while (!abort.signal.aborted) {
      let response: Response;
      try {
        response = await settings.fetch(callUrl(settings, path), {
          headers: {
            ...baseHeaders(settings),
            accept: 'text/event-stream',
            ...(lastEventId !== null ? { 'last-event-id': lastEventId } : {}),
          },
          signal: abort.signal,
        });
      } catch (error) {
        if (abort.signal.aborted) return;
        if (!reconnect) throw error;
        await pause(false);
        continue;
      }
      if (!response.ok) {
        const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
        const error = await CompactorApiError.from(response, `GET ${path}`);
        // A deploy: the proxy answers 502/503/504 until the API is back.
        if (!reconnect || !mayRetry('GET', error, false)) throw error;
        const delay = retryDelayMs(settings.retry, failures, retryAfter);
        if (delay === null) throw error;
        failures += 1;
        await sleep(delay, abort.signal).catch(() => undefined);
        continue;
      }
      if (!response.body) return;
      let subscribed = false;
      try {
        const blocks = readSse(response.body, {
          onComment: (text) => {
            if (text !== 'connected') return;
            subscribed = true;
            failures = 0;
            options.onOpen?.();
          },
          onRetry: (ms) => (serverRetryMs = ms),
          onId: (id) => (lastEventId = id),
        });
        for await (const block of blocks) {
          if (abort.signal.aborted) return;
          const event = parseEvent(block.data);
          if (!event) continue;
          yield event;
          // The session is gone: the API ended the stream, and a reconnect would be a 404.
          if (event.type === SESSION_DELETED_EVENT) return;
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        if (!reconnect) throw error;
      }
      if (!reconnect || abort.signal.aborted) return;
      await pause(subscribed);
    }
  } finally {
    options.signal?.removeEventListener('abort', stop);
    abort.abort();
  }

  /**
   * Waits before reconnecting: the server's `retry:`, else the backoff. A stream that was
   * subscribed and then ended (a deploy, a proxy's timeout) reconnects after the first backoff
   * without spending the retry budget; failed connections spend it and give up past the limit.
   */
  async function pause(afterSubscribedStream: boolean): Promise<void> {
    const backoff = afterSubscribedStream
      ? settings.retry.baseDelayMs
      : retryDelayMs(settings.retry, failures, null);
    if (backoff === null) throw new Error(`GET ${path}: the event stream kept failing; gave up`);
    if (!afterSubscribedStream) failures += 1;
    await sleep(serverRetryMs ?? backoff, abort.signal).catch(() => undefined);
  }
}

/** An event block's JSON, or null when it is not one of the API's events (skipped, not fatal). */
function parseEvent(data: string): SessionEventMessage | null {
  try {
    const parsed = SessionEventPayload.safeParse(JSON.parse(data));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
