import { randomUUID } from 'node:crypto';

/** A BullMQ prefix no other test uses, so tests can share one Redis and run in parallel. */
export function uniqueQueuePrefix(label = 'test'): string {
  return `${label}-${randomUUID()}`;
}
