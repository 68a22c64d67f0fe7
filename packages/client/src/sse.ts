/** A Server-Sent Events reader: bytes in, `{ event, data, id, retry }` blocks out (WHATWG rules). */

/** One dispatched event block. */
export interface SseBlock {
  /** `event:` (default `message`). */
  event: string;
  /** The `data:` lines joined with newlines. */
  data: string;
  /** `id:` when the block set one. */
  id: string | null;
  /** `retry:` in milliseconds, when the block set it. */
  retry: number | null;
}

/**
 * What the parser saw besides events: comments (`: connected`, `: keepalive`), and `retry:` and
 * `id:` as they take effect (`retry:` at once, `id:` when its block ends, even without data).
 */
export interface SseCallbacks {
  onComment?(text: string): void;
  onRetry?(ms: number): void;
  onId?(id: string): void;
}

/**
 * Parses a text/event-stream body into blocks as they complete. Comments are reported and
 * skipped; a block without `data:` dispatches nothing (as in browsers' EventSource).
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  callbacks: SseCallbacks = {},
): AsyncGenerator<SseBlock> {
  const decoder = new TextDecoder();
  let buffer = '';
  let block: SseBlock = { event: 'message', data: '', id: null, retry: null };
  let hasData = false;
  const reader = body.getReader();
  try {
    for (let ended = false; !ended;) {
      const { value, done } = await reader.read();
      ended = done;
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const line = buffer.slice(0, newline);
        const width = buffer.startsWith('\r\n', newline) ? 2 : 1;
        // A lone \r at the very end may be the first half of \r\n: wait for the next chunk
        // (at the end of the stream there is none: it ends the line).
        if (!ended && buffer[newline] === '\r' && width === 1 && newline === buffer.length - 1) break;
        buffer = buffer.slice(newline + width);
        if (line === '') {
          if (block.id !== null) callbacks.onId?.(block.id);
          if (hasData) yield { ...block, data: block.data.slice(0, -1) };
          block = { event: 'message', data: '', id: block.id, retry: null };
          hasData = false;
          continue;
        }
        if (line.startsWith(':')) {
          callbacks.onComment?.(line.slice(1).trimStart());
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') block.event = value;
        else if (field === 'data') {
          block.data += `${value}\n`;
          hasData = true;
        } else if (field === 'id' && !value.includes('\u0000')) block.id = value;
        else if (field === 'retry' && /^\d+$/.test(value)) {
          block.retry = Number(value);
          callbacks.onRetry?.(block.retry);
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
