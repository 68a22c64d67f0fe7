import type { Message } from '@compactor/core';
import type { MessageWindow } from './message-source';

/** Messages whose transcript is counted at once (concurrently) while a chunk is planned. */
const COUNT_BATCH = 32;

/**
 * Transcript tokens of the messages a chunked summary works on (each message's count `+ 1`: the
 * blank line between blocks), counted once each and forgotten with the chunk that held them.
 */
export class TranscriptCounts {
  private readonly counts = new Map<number, number>();

  constructor(
    private readonly messages: MessageWindow,
    private readonly countMessage: (message: Message) => number | Promise<number>,
    private readonly pace: () => Promise<void>,
  ) {}

  /**
   * Counts of the messages from `from` on, only as far as needed: until their sum passes `limit`
   * (the message that passes it included) or the messages end (`complete`). What is sent is
   * counted, not a transcript fifty times too long to learn that it is.
   */
  async until(from: number, limit: number): Promise<{ tokens: number[]; complete: boolean }> {
    const tokens: number[] = [];
    let total = 0;
    const { length } = this.messages;
    for (let at = from; at < length; at += COUNT_BATCH) {
      const batch = await this.messages.slice(at, Math.min(at + COUNT_BATCH, length));
      const counted = await Promise.all(batch.map((message, i) => this.of(at + i, message)));
      for (const count of counted) {
        tokens.push(count);
        total += count;
        if (total > limit) return { tokens, complete: false };
      }
      await this.pace();
    }
    return { tokens, complete: true };
  }

  /** The counts of messages `[start, end)` are not needed any more. */
  forget(start: number, end: number): void {
    for (let index = start; index < end; index += 1) this.counts.delete(index);
  }

  private async of(index: number, message: Message): Promise<number> {
    const known = this.counts.get(index);
    if (known !== undefined) return known;
    const count = (await this.countMessage(message)) + 1;
    this.counts.set(index, count);
    return count;
  }
}
