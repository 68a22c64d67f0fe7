import { Worker } from 'node:worker_threads';
import type { EncodingName } from '@compactor/tokenizer';
import type { AppendBodyAnswer, AppendBodyJob } from './append-body-worker';
import { movableBuffers } from './movable-buffers';
import type { PreparedAppendBody } from './prepare-append-body';
import type { MediaFamily } from '@compactor/core';

interface Pending {
  job: AppendBodyJob;
  resolve(answer: { bytes: Uint8Array; outcome: PreparedAppendBody }): void;
  reject(error: Error): void;
}

/**
 * One worker thread that prepares large append bodies ({@link prepareAppendBody}) one at a time,
 * in arrival order, so that their parsing, counting and serialising never hold the event loop
 * (on this 2-core machine: one core for the event loop, one for this thread, Postgres between).
 * Started at the first body, kept while the process runs; a thread that dies fails the job it
 * had and the next job starts another.
 */
export class AppendBodyThread {
  private worker: Worker | undefined;
  private readonly queue: Pending[] = [];
  private running: Pending | undefined;
  private nextId = 0;
  private closed = false;

  /**
   * Prepares the body in `segments` (moved to the thread, not copied: they are empty once sent;
   * the answer carries the body back whole); messages without an id get one from `keyedIdPrefix`.
   */
  prepare(
    segments: Uint8Array[],
    encoding: EncodingName,
    now: Date,
    keyedIdPrefix?: string,
    mediaFamily?: MediaFamily,
  ): Promise<{ bytes: Uint8Array; outcome: PreparedAppendBody }> {
    if (this.closed) return Promise.reject(new Error('the append body thread is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({
        job: { id: this.nextId++, segments, encoding, nowMs: now.getTime(), keyedIdPrefix, mediaFamily },
        resolve,
        reject,
      });
      this.startNext();
    });
  }

  /** Bodies waiting or being prepared. */
  get size(): number {
    return this.queue.length + (this.running ? 1 : 0);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.queue.splice(0)) pending.reject(new Error('the append body thread is closed'));
    await this.worker?.terminate();
    this.worker = undefined;
  }

  private startNext(): void {
    if (this.running || this.queue.length === 0) return;
    const pending = this.queue.shift()!;
    this.running = pending;
    this.thread().postMessage(pending.job, movableBuffers(pending.job.segments));
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./append-body-worker.mjs', import.meta.url));
    // Idle, it must not keep the process alive (tests, a CLI that builds the server).
    worker.unref();
    worker.on('message', (answer: AppendBodyAnswer) => this.settle(answer));
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(new Error(`the append body thread exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  private settle(answer: AppendBodyAnswer): void {
    const pending = this.running;
    this.running = undefined;
    if (pending && pending.job.id === answer.id) {
      if ('outcome' in answer) pending.resolve({ bytes: answer.bytes, outcome: answer.outcome });
      else pending.reject(new Error(`preparing an append body failed: ${answer.failure}`));
    }
    this.startNext();
  }

  /** The thread died (out of memory, say): its job fails, the next job starts a new one. */
  private fail(error: Error): void {
    const pending = this.running;
    this.running = undefined;
    // Its exit follows its error: one failure is enough, and a late event must find a listener.
    this.worker?.removeAllListeners().on('error', () => undefined);
    this.worker = undefined;
    pending?.reject(error);
    if (!this.closed) this.startNext();
  }
}
