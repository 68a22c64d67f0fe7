/**
 * A minimal Server-Sent Events client over fetch, for `GET /v1/sessions/:id/events`: resolves
 * once the API confirms the subscription (`: connected`), then calls `onEvent` per event.
 */

/** One event as the API sends it (`data` of an `event: <type>` block). */
export interface SessionEventMessage {
  type: string;
  sessionId: string;
  compactionId: string | null;
  at: string;
  data: Record<string, unknown>;
}

export interface EventStream {
  /** Ends the stream. */
  close(): void;
  /** Resolves when the stream ends (closed by us, by the server, or broken). */
  ended: Promise<void>;
}

export async function openEventStream(
  url: string,
  headers: Record<string, string>,
  onEvent: (event: SessionEventMessage) => void,
  onEnd: (error: Error | null) => void = () => undefined,
): Promise<EventStream> {
  const abort = new AbortController();
  const response = await fetch(url, {
    headers: { ...headers, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  if (!response.ok || !response.body) {
    throw new Error(`GET ${new URL(url).pathname} → ${response.status}: ${await response.text()}`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let connected: () => void = () => undefined;
  const isConnected = new Promise<void>((resolve) => (connected = resolve));

  const handle = (block: string) => {
    let type = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        if (line.startsWith(': connected')) connected();
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') type = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) return;
    try {
      onEvent({ ...(JSON.parse(data.join('\n')) as SessionEventMessage), type });
    } catch {
      // Not JSON: not one of the API's events.
    }
  };

  const ended = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          handle(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
      onEnd(abort.signal.aborted ? null : new Error('the server ended the event stream'));
    } catch (error) {
      onEnd(abort.signal.aborted ? null : (error as Error));
    } finally {
      connected();
    }
  })();

  await isConnected;
  return { close: () => abort.abort(), ended };
}
