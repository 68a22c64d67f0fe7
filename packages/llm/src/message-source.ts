import { setImmediate as nextTurn } from 'node:timers/promises';
import { storedTokens, type Message } from '@compactor/core';

/**
 * Messages to summarise that need not be held at once: their number, and a reader that returns
 * them window by window from any index, in order. A compaction reads a long session's covered
 * range this way (by seq, from the database), so summarising it costs a chunk's memory, not the
 * session's; an array is a source too ({@link arraySource}).
 */
export interface MessageSource {
  readonly length: number;
  /** Stored tokens of all its messages, when the caller knows them (else they are summed as read). */
  readonly storedTokens?: number;
  /** Messages `from…length`, window by window, in order. */
  windows(from: number): AsyncIterable<readonly Message[]>;
}

/** Messages held in memory, as a source of windows of `windowSize`. */
export function arraySource(messages: readonly Message[], windowSize = 512): MessageSource {
  return {
    length: messages.length,
    storedTokens: storedTokens(messages),
    async *windows(from) {
      for (let start = from; start < messages.length; start += windowSize)
        yield messages.slice(start, start + windowSize);
    },
  };
}

/** Whether `messages` is a {@link MessageSource} rather than an array. */
export function isMessageSource(messages: readonly Message[] | MessageSource): messages is MessageSource {
  return !Array.isArray(messages);
}

/** The first window of a source (empty when it has none): where its leading summary messages are. */
export async function firstWindow(source: MessageSource): Promise<readonly Message[]> {
  for await (const window of source.windows(0)) return window;
  return [];
}

/** Work between two yields to the event loop, at most (probes and lock renewals wait that long). */
export const YIELD_EVERY_MS = 5;

/**
 * Lets timers and I/O run during a long loop: `await pace()` returns at once until
 * {@link YIELD_EVERY_MS} of work has passed since the last yield, then waits one turn of the loop.
 */
export function pacer(everyMs = YIELD_EVERY_MS): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < everyMs) return;
    await nextTurn();
    since = performance.now();
  };
}

/**
 * The part of a source a chunked summary is working on: read forward window by window as the
 * chunks need messages, released behind them once a chunk is summarised. Indexes are the
 * source's minus `offset` (the leading summary messages the previous summary stands for).
 */
export class MessageWindow {
  private held: Message[] = [];
  /** Index (after `offset`) of `held[0]`. */
  private first = 0;
  private reader: AsyncIterator<readonly Message[]> | null = null;
  private readonly pace = pacer();

  constructor(
    private readonly source: MessageSource,
    private readonly offset: number,
  ) {}

  /** Messages after the offset. */
  get length(): number {
    return this.source.length - this.offset;
  }

  /** Messages `[start, end)`; read from the source as far as needed. */
  async slice(start: number, end: number): Promise<Message[]> {
    const stop = Math.min(end, this.length);
    if (start < this.first) return this.reread(start, stop);
    while (this.first + this.held.length < stop) {
      if (this.reader === null) {
        const windows = this.source.windows(this.offset + this.first + this.held.length);
        this.reader = windows[Symbol.asyncIterator]();
      }
      const next = await this.reader.next();
      if (next.done) break;
      for (const message of next.value) this.held.push(message);
      await this.pace();
    }
    return this.held.slice(start - this.first, stop - this.first);
  }

  /** Message `index`, read if need be. */
  async at(index: number): Promise<Message | undefined> {
    return (await this.slice(index, index + 1))[0];
  }

  /** Messages before `index` are done with: they are let go (a later need reads them again). */
  release(index: number): void {
    const drop = Math.min(index - this.first, this.held.length);
    if (drop <= 0) return;
    this.held = this.held.slice(drop);
    this.first += drop;
  }

  /** Messages before what is held, read again from the source (not in the usual forward walk). */
  private async reread(start: number, end: number): Promise<Message[]> {
    const out: Message[] = [];
    for await (const window of this.source.windows(this.offset + start)) {
      for (const message of window) {
        if (out.length >= end - start) return out;
        out.push(message);
      }
      await this.pace();
    }
    return out;
  }
}

/** Sources one after the other, as one. */
export function concatSources(...sources: MessageSource[]): MessageSource {
  const stored = sources.map((s) => s.storedTokens);
  return {
    length: sources.reduce((total, s) => total + s.length, 0),
    ...(stored.every((t) => t !== undefined) ? { storedTokens: stored.reduce((a, b) => a + b, 0) } : {}),
    async *windows(from) {
      let skip = from;
      for (const source of sources) {
        if (skip >= source.length) {
          skip -= source.length;
          continue;
        }
        yield* source.windows(skip);
        skip = 0;
      }
    },
  };
}
