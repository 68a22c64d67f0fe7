/**
 * The worker thread's side of {@link AppendBodyThread}: prepares one body at a time and sends
 * it back with the serialised rows' memory transferred, not copied (nor the body's, which the
 * caller keeps in case it must prepare the batch again).
 */
import { getPriority, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import type { EncodingName } from '@compactor/tokenizer';
import { prepareAppendBody, type PreparedAppendBody } from './prepare-append-body';
import { movableBuffers } from './movable-buffers';
import type { MediaFamily } from '@compactor/core';

/** A body to prepare, as the thread is sent it. */
export interface AppendBodyJob {
  id: number;
  /** The body, in the segments it was read in (or whole, from an earlier answer). */
  segments: Uint8Array[];
  encoding: EncodingName;
  nowMs: number;
  /** An `Idempotency-Key`'s id prefix, for the messages sent without an id. */
  keyedIdPrefix?: string | undefined;
  /** How the session's model counts images (`any` when not given). */
  mediaFamily?: MediaFamily | undefined;
}

/** The thread's answer to one job, with the body whole: the outcome, or the message of what it threw. */
export type AppendBodyAnswer =
  | { id: number; bytes: Uint8Array; outcome: PreparedAppendBody }
  | { id: number; bytes: Uint8Array; failure: string };

/**
 * The thread's nice value, above the event loop's: on Linux a thread's priority is its own, so
 * where the two compete for a core the event loop (other tenants' requests) goes first and this
 * thread takes what is left.
 */
const BACKGROUND_NICENESS = 10;
try {
  // pid 0: the calling thread (Linux); raising one's own nice value needs no privilege.
  setPriority(0, Math.max(BACKGROUND_NICENESS, getPriority(0)));
} catch {
  // A platform that refuses it: the thread runs at the process's priority.
}

const port = parentPort!;
port.on('message', (job: AppendBodyJob) => {
  const bytes = job.segments.length === 1 ? job.segments[0]! : Buffer.concat(job.segments);
  void answer(job, bytes).then(
    (outcome) => send({ id: job.id, bytes, outcome }),
    (error: unknown) => send({ id: job.id, bytes, failure: String((error as Error)?.message) }),
  );
});

async function answer(job: AppendBodyJob, bytes: Uint8Array): Promise<PreparedAppendBody> {
  return prepareAppendBody(bytes, job.encoding, new Date(job.nowMs), job.keyedIdPrefix, job.mediaFamily);
}

function send(message: AppendBodyAnswer): void {
  const parts = [message.bytes];
  if ('outcome' in message && message.outcome.kind === 'serialized') {
    const { rows } = message.outcome.batch;
    parts.push(rows.messages, rows.parts);
  }
  port.postMessage(message, movableBuffers(parts));
}
