import type { CompactionStep } from '@compactor/core';
import type { CompactionWithOutbox, Db, SessionRow } from '@compactor/db';
import type { Tokenizer } from '@compactor/tokenizer';
import type { Llm } from '@compactor/llm';
import type { SessionEventPublisher } from './session-events';

/** Log lines the workflow writes; pino's logger fits, so does a test spy. */
export interface WorkflowLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What the compaction workflow needs, passed explicitly (no module singletons). */
export interface WorkflowResources {
  db: Db;
  llm: Llm;
  clock: () => Date;
  log: WorkflowLog;
  /**
   * The exact counter for a model's summary messages; the API's `TOKENIZER_ENCODING` setting
   * must pick the same one. Default: the encoding the model id maps to.
   */
  tokenizerFor?: (modelId: string) => Tokenizer;
  /** Progress events for the session's SSE stream; none when omitted. */
  events?: SessionEventPublisher;
  /** A deployment-wide summarizer model (cheaper, say), below the session policy's choice. */
  summarizerModel?: string | null;
  /** Model for topic-boundary detection; defaults to the summarizer's. */
  topicModel?: string | null;
  /** Metrics hooks; none when omitted. */
  observer?: WorkflowObserver;
  /**
   * How a compaction reads its covered history (covered-history.ts): `messages` per read, about
   * what one compaction holds of a long session at a time (default `COVERED_WINDOW_MESSAGES`,
   * 500), and `onRead`, told how many messages each read returned.
   */
  historyWindow?: { messages?: number; onRead?: (messages: number) => void };
  /**
   * Follow-ups (follow-up.ts): a compaction whose completion leaves the session over its trigger,
   * through messages appended while it ran, requests the next one in its completing transaction:
   * the row and the outbox entry of job `jobName`, as the API's auto trigger writes them. Once
   * that committed, `started` announces it and enqueues its job (the queue's, as for the API's
   * requests). Without it, the next append's trigger asks instead.
   */
  followUps?: {
    jobName: string;
    started(session: SessionRow, requested: CompactionWithOutbox): Promise<void>;
  };
  /**
   * Runs a wait on other work (a prepared summary being written) without holding the job's place
   * in the worker's step gate, as its LLM calls do: the job awaited may need that place to
   * finish. Without it the wait runs in place.
   */
  waitOutside?: <T>(wait: () => Promise<T>) => Promise<T>;
  /**
   * Whether a live worker still writes prepared summary `draftId` (the queue: its job's lock,
   * whose duration is every job's). A compaction waiting for that draft stops waiting once it is
   * not: a dead writer's draft never lands. Without it the wait ends at its limit.
   */
  draftWriterAlive?: (draftId: string) => Promise<boolean>;
}

/**
 * What the workflow reports as it goes, for metrics. Hooks are synchronous and must not throw.
 * A compaction's end is the queue's `compaction.ended` worker event (`WorkerEventMap`).
 */
export interface WorkflowObserver {
  /** A step's work ended (its record closes then or with the next step's statement). */
  stepEnded?(step: CompactionStep, outcome: 'completed' | 'failed', durationMs: number): void;
}

/** A {@link WorkflowLog} that drops every line (tests, scripts). */
export const silentLog: WorkflowLog = { info: () => undefined, warn: () => undefined };
