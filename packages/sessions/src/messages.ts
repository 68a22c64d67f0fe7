import { finishesTurn, mediaFamilyOf, usagePeaks, type Message, type Part } from '@compactor/core';
import {
  countPart,
  patchMessageReading,
  sessionStatusInputsSql,
  statusInputsFromRows,
  storeMediaObjects,
  type AppendedMessage,
  type MediaIngest,
  type CompactionRow,
  type SessionRow,
} from '@compactor/db';
import type { AppendMessagesBody, PatchMessageBody } from '@compactor/contract';
import type { z } from 'zod';
import type { AppendAnswer, FinishMessageAnswer } from './answers';
import { appendCounted, KnownSessions, knownSession } from './append';
import { parsedBody, unparsedBody, type AppendSource, type PreparedAppend } from './append-sources';
import { keyedIdPrefix } from './keyed-message-ids';
import { afterWrite, type AfterWrite } from './auto-trigger';
import type { FreshReading } from './context';
import { AppendBodyThread } from './large-bodies/append-body-thread';
import { LARGE_APPENDS_IN_FLIGHT, LargeAppendSlots } from './large-bodies/large-append-slots';
import type { OperationLog, SessionResources } from './resources';
import { SessionWriteQueue, sessionKey } from './session-writes';
import { requireSession, type SessionTarget } from './sessions';
import { recordAppendedTasks, recordPatchedTasks } from './tasks';
import type { TenantLimits } from './tenant-limits';
import { checkUsageReports } from './usage-check';
import { finishTaskCallsLate, isCompactedMessageConflict } from './tasks-late';
import { refusingMedia } from './media-refusal';
import { toolCallIds, withStoredToolInputs } from './patch-inputs';

/** Writes to one session a process queues before refusing more (see {@link SessionWriteQueue}). */
export const DEFAULT_SESSION_WRITE_QUEUE_LIMIT = 32;

/**
 * An append's body: validated messages, or a large body's bytes left unparsed by the transport
 * (in the segments it was read in), which a worker thread parses, validates, counts and
 * serialises off the event loop.
 */
export type AppendBody = (
  { kind: 'parsed'; messages: ParsedMessages } | { kind: 'unparsed'; segments: Uint8Array[] }
) & {
  /** The request's `Idempotency-Key`: messages without an id get ids derived from it. */
  idempotencyKey?: string | undefined;
};

type ParsedMessages = z.infer<typeof AppendMessagesBody>['messages'];

/** A parsed batch counted for a model before its session exists ({@link SessionMessages.countAhead}). */
export interface CountedAhead {
  messages: ParsedMessages;
  modelId: string;
  source: AppendSource;
  prepared: PreparedAppend;
}

const triggered = (row: CompactionRow | null) =>
  row && { id: row.id, status: row.status, reason: row.reason };

/**
 * The writes of a session's messages in one process: appends and finished turns, one at a time
 * per session ({@link SessionWriteQueue}), each followed by the status and what the auto
 * trigger starts. It holds what must live as long as the process serves: the write queue, the
 * sessions it knows ({@link KnownSessions}), and the worker thread for large bodies; `close` it
 * with the server.
 */
export class SessionMessages {
  private readonly writes: SessionWriteQueue;
  private readonly sessions = new KnownSessions();
  private readonly bodyThread = new AppendBodyThread();
  private readonly largeAppends: LargeAppendSlots;

  constructor(
    private readonly resources: SessionResources,
    private readonly limits: TenantLimits,
    {
      sessionWriteQueueLimit = DEFAULT_SESSION_WRITE_QUEUE_LIMIT,
      largeAppendsInFlight = LARGE_APPENDS_IN_FLIGHT,
    }: { sessionWriteQueueLimit?: number | undefined; largeAppendsInFlight?: number | undefined } = {},
  ) {
    this.writes = new SessionWriteQueue(sessionWriteQueueLimit);
    this.largeAppends = new LargeAppendSlots(largeAppendsInFlight);
  }

  /**
   * `POST /v1/sessions/:id/messages`: appends a batch (idempotent by message id, and with an
   * `Idempotency-Key` by the ids it gives messages sent without one), then the status and what
   * the auto trigger started.
   */
  async append(target: SessionTarget, body: AppendBody, log: OperationLog): Promise<AppendAnswer> {
    return (await this.appendWithReading(target, body, log)).answer;
  }

  /**
   * {@link append}, with the status reading it ended with while it still describes the session
   * as this append left it (null when the auto trigger started a compaction): a context read
   * right after may take it instead of reading the status again (`sessionContext`).
   */
  async appendWithReading(
    target: SessionTarget,
    body: AppendBody,
    log: OperationLog,
    counted?: CountedAhead,
  ): Promise<{ answer: AppendAnswer; reading: FreshReading | null }> {
    const { appended, settled } = await this.write(target, body, log, counted);
    const { session, after } = await settled;
    return {
      answer: {
        messages: appended,
        status: after.status,
        compaction: triggered(after.compaction),
        prune: after.prune,
      },
      reading: after.unchanged && { session, snapshot: after.unchanged },
    };
  }

  /**
   * Counts a parsed batch for `modelId` before its session exists: what the count refuses (a
   * `data:` URL that is no image the providers take, an id the batch repeats) is refused before the
   * caller creates anything. {@link appendCountedAhead} writes it; it is counted again only when
   * the session turns out to have another model.
   */
  async countAhead(messages: ParsedMessages, modelId: string): Promise<CountedAhead> {
    const source = parsedBody(this.resources, messages);
    return { messages, modelId, source, prepared: await source.prepare(modelId) };
  }

  /** {@link appendWithReading} of a batch {@link countAhead} counted. */
  async appendCountedAhead(
    target: SessionTarget,
    counted: CountedAhead,
    log: OperationLog,
  ): Promise<{ answer: AppendAnswer; reading: FreshReading | null }> {
    return this.appendWithReading(target, { kind: 'parsed', messages: counted.messages }, log, counted);
  }

  /**
   * The write of an append, resolved once it is committed, and what follows it (`settled`: the
   * status and the auto trigger, whose inputs are read in the write's round trip) still holding
   * the session's place in the queue until it ends. `counted`: the body counted ahead.
   */
  private async write(
    target: SessionTarget,
    body: AppendBody,
    log: OperationLog,
    counted?: CountedAhead,
  ): Promise<{ appended: AppendedMessage[]; settled: Promise<{ session: SessionRow; after: AfterWrite }> }> {
    const { resources, limits, sessions } = this;
    const key = sessionKey(target.tenantId, target.id);
    // Its place in the session's queue first: a refused append costs no counting.
    const place = this.writes.reserve(key);
    // A large body keeps its bytes and rows in memory until written: a bounded number at once.
    let release: (() => void) | undefined;
    const done = () => {
      place.release();
      release?.();
    };
    try {
      release = body.kind === 'unparsed' ? this.largeAppends.take() : undefined;
      // The model whose encoding counts the batch: the one the session had at its last append
      // here, or looked up. The append checks it under the session's lock.
      const known =
        sessions.get(key) ?? knownSession(await requireSession(resources.db, target.tenantId, target.id));
      const prefix =
        body.idempotencyKey === undefined
          ? undefined
          : keyedIdPrefix(target.tenantId, target.id, body.idempotencyKey);
      const source =
        counted?.source ??
        (body.kind === 'unparsed'
          ? unparsedBody(resources, this.bodyThread, body.segments, prefix)
          : parsedBody(resources, body.messages, prefix));
      // Counted before the write: tokenizing large outputs must not wait in the session's queue.
      const prepared =
        counted?.modelId === known.modelId ? counted.prepared : await source.prepare(known.modelId);
      // The write and what it triggers, one at a time per session (see SessionWriteQueue).
      let written!: (appended: AppendedMessage[]) => void;
      const committed = new Promise<AppendedMessage[]>((resolve) => (written = resolve));
      const settled = place.run(async () => {
        const { session, appended, turnEnds, statusInputs } = await appendCounted(
          resources,
          { tenantId: target.tenantId, id: target.id },
          known,
          prepared,
          { source, sessions, key },
        );
        written(appended);
        // The task calls it holds, before the status: a context read after the answer finds them.
        await recordAppendedTasks(resources, session, prepared.batch, appended, log);
        // A re-posted (not created) message finishes nothing new.
        const finishedTurn = appended.some((message, i) => message.created && turnEnds[i] === true);
        const after = await afterWrite(resources, limits, session, {
          finishedTurn,
          log,
          ...(statusInputs ? { prefetched: statusInputs } : {}),
        });
        return { session, after };
      });
      void settled.then(done, done);
      // A write that failed rejects `settled` before `committed` resolves.
      const appended = await Promise.race([committed, settled.then(() => committed)]);
      return { appended, settled };
    } catch (error) {
      done();
      throw error;
    }
  }

  /**
   * `PATCH /v1/sessions/:id/messages/:messageId`: finishes a streamed turn (finish, usage, error,
   * tool results), then the status and what the auto trigger started.
   */
  async finish(
    target: SessionTarget,
    messageId: string,
    body: z.infer<typeof PatchMessageBody>,
    log: OperationLog,
  ): Promise<FinishMessageAnswer> {
    return (await this.finishWithReading(target, messageId, body, log)).answer;
  }

  /**
   * {@link finish}, with the status reading it ended with (as {@link appendWithReading}).
   * `known`: the session's row as the caller read it in this request (it is not read again).
   */
  async finishWithReading(
    target: SessionTarget,
    messageId: string,
    body: z.infer<typeof PatchMessageBody>,
    log: OperationLog,
    known?: SessionRow,
  ): Promise<{ answer: FinishMessageAnswer; reading: FreshReading | null }> {
    const { resources, limits } = this;
    const session = known ?? (await requireSession(resources.db, target.tenantId, target.id));
    if (body.usage) checkUsageReports(usagePeaks([body.usage]), session.contextWindow, () => '/usage');
    const counter = resources.tokenizerFor(session.modelId);
    const inputs = await withStoredToolInputs(resources.db, session.pk, messageId, body.parts);
    const parts: Part[] = [];
    const media: MediaIngest = { family: mediaFamilyOf(session.modelId), objects: [] };
    for (const part of inputs) parts.push(await refusingMedia(countPart(part, counter, media)));
    await storeMediaObjects(resources.db, target.tenantId, media.objects);
    const { finish, error, usage } = body;
    let outcome: { message: Message; after: AfterWrite };
    try {
      outcome = await this.writes.run(sessionKey(target.tenantId, target.id), async () => {
        // The status inputs are read in the patch's own round trip (as an append's are).
        const { pinSystemMessages } = knownSession(session);
        const { message, readAfter } = await patchMessageReading(
          resources.db,
          session.pk,
          messageId,
          {
            ...(finish !== undefined ? { finish } : {}),
            ...(error !== undefined ? { error } : {}),
            ...(usage !== undefined ? { usage } : {}),
            parts,
          },
          sessionStatusInputsSql(session.pk, { pinSystemMessages }),
        );
        await recordPatchedTasks(resources, session, message, toolCallIds(parts), log);
        const after = await afterWrite(resources, limits, session, {
          finishedTurn: finishesTurn(message.role, finish),
          log,
          ...(readAfter
            ? { prefetched: { pinSystemMessages, inputs: statusInputsFromRows(readAfter) } }
            : {}),
        });
        return { message, after };
      });
    } catch (error) {
      // A task's result that lands after a compaction covered its call is refused as a change to
      // a compacted message; it is stored and delivered into the view as a message instead.
      const late = isCompactedMessageConflict(error)
        ? await finishTaskCallsLate(resources, session, messageId, parts, log, (batch) =>
            this.append(target, { kind: 'parsed', messages: batch }, log),
          )
        : null;
      if (!late) throw error;
      return { answer: late, reading: null };
    }
    const { message, after } = outcome;
    return {
      answer: {
        ...message,
        status: after.status,
        compaction: triggered(after.compaction),
        prune: after.prune,
      },
      reading: after.unchanged && { session, snapshot: after.unchanged },
    };
  }

  /** Stops the large-body thread (bodies still waiting for it fail). */
  async close(): Promise<void> {
    return this.bodyThread.close();
  }
}
