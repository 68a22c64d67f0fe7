/**
 * One request of a conversation at a time in this process: two requests of the same conversation
 * (an agent's retry racing its original) resolve and write one after the other, so the second
 * sees what the first stored instead of creating a second session or writing the suffix again.
 * Across processes the writes stay idempotent on their own (message ids and links follow from
 * the chain; see conversation-sessions.ts for session ids).
 */
import type { SessionMessages } from '@compactor/sessions';

/** Runs tasks one at a time per key; keys without a waiting task hold no memory. */
export class KeyedSerializer {
  private readonly tails = new Map<string, Promise<void>>();
  /** Tasks finished so far, of every key: a caller that read it before deciding sees whether any ran since. */
  completed = 0;

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const tail = new Promise<void>((resolve) => (release = resolve));
    const chained = previous.then(() => tail);
    this.tails.set(key, chained);
    await previous;
    try {
      return await task();
    } finally {
      this.completed += 1;
      release();
      if (this.tails.get(key) === chained) this.tails.delete(key);
    }
  }
}

// One serializer per SessionMessages: the API holds a single one for the process, whose write
// queue orders a session's writes the same way, and tests that build their own get their own.
const serializers = new WeakMap<SessionMessages, KeyedSerializer>();

/** The serializer of the process's conversations (keyed by the API's SessionMessages). */
export function conversationSerializer(messages: SessionMessages): KeyedSerializer {
  let serializer = serializers.get(messages);
  if (!serializer) {
    serializer = new KeyedSerializer();
    serializers.set(messages, serializer);
  }
  return serializer;
}
