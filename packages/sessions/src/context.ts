import {
  applyMediaBudget,
  assembleContext,
  mediaBudgetOf,
  toOpenAIMessages,
  withTasksBlock,
  type AssembledContext,
} from '@compactor/core';
import {
  loadContextRows,
  type ContextRows,
  type DbOrTx,
  resolveMediaReferences,
  type Db,
  type SessionRow,
} from '@compactor/db';
import type { ContextFitKind } from '@compactor/contract';
import type { ContextAnswer } from './answers';
import { waitForCompactionEnd } from './compaction-wait';
import { contextMemos, type ContextMemos } from './context-memo';
import { fitCounters, fitToUsable } from './context-fit';
import type { SessionResources } from './resources';
import { requireSession, type SessionTarget } from './sessions';
import { statusSnapshot, type StatusSnapshot } from './status';
import { tasksBlockFor } from './tasks';

/** What a context read asks for (`GET /v1/sessions/:id/context`'s query). */
export interface ContextRequest {
  format: 'native' | 'openai';
  /** `auto`: a view over `usable` is served fitted; `none`: the stored view as it is. */
  fit: 'auto' | 'none';
  /** Milliseconds to wait, at most, for the active compaction when the view is over. */
  waitMs?: number | undefined;
}

/**
 * A status read by the caller after its last write to the session, under the session's write
 * queue (the append or finish it made returned it), with the session row that write returned:
 * the context read takes it instead of reading the status again when the view it then reads is
 * the one this status describes (see {@link readContextAfter}).
 */
export interface FreshReading {
  session: SessionRow;
  snapshot: StatusSnapshot;
}

/** What the caller already holds: a fresh status reading, or at least the session row. */
export interface ContextKnown {
  reading?: FreshReading | null | undefined;
  /** The session's row as read in this request (it is not read again). */
  session?: SessionRow | undefined;
}

/** One consistent reading of the session: its status and the context view it describes. */
interface ContextReading {
  snapshot: StatusSnapshot;
  context: AssembledContext;
}

/**
 * `GET /v1/sessions/:id/context`: what the model should see next, made to fit `status.usable`
 * (DESIGN.md, "The served context always fits"). The filter (latest completed compaction, its
 * boundary) runs in SQL; core renders the result, natively or as a Chat Completions array. When
 * the status says the view is over `usable`, it is served fitted, at once and without the LLM:
 * the ready prepared draft in place of what it covers when it still applies, else core's read-time
 * fit of the view (`fitViewForRead`); `fit` says which. `waitMs` first waits for the active
 * compaction, bounded; `fit: 'none'` serves the view as it is. `memos`: where the view's rows
 * read last time are kept (./context-memo.ts), null to read every row (what a read that keeps
 * nothing serves: tests compare the two).
 */
export async function sessionContext(
  resources: Pick<SessionResources, 'db' | 'tokenizerFor' | 'events'>,
  target: SessionTarget,
  request: ContextRequest,
  known: ContextKnown = {},
  memos: ContextMemos | null = contextMemos,
): Promise<ContextAnswer> {
  const session =
    known.reading?.session ??
    known.session ??
    (await requireSession(resources.db, target.tenantId, target.id));
  // When the caller's reading says a compaction is behind the view, the tasks block such a view
  // carries is read beside it (one round trip instead of two); used only while that reading holds.
  const tasksBeside = known.reading?.snapshot.latestCompleted
    ? readTasksBlock(resources, session, known.reading.snapshot)
    : null;
  tasksBeside?.catch(() => undefined);
  let reading =
    (known.reading && (await readContextAfter(resources.db, known.reading, memos))) ??
    (await readContext(resources.db, session, memos));
  const active = reading.snapshot.active;
  if (request.fit === 'auto' && overUsable(reading.snapshot) && active && request.waitMs) {
    if (await waitForCompactionEnd(resources, session.pk, active.id, request.waitMs))
      reading = await readContext(resources.db, session, memos);
  }

  // Images past the media budget become markers first: the fit below sees what they left.
  reading = withMediaBudget(reading);
  const { snapshot, context } = reading;
  // After a boundary the view carries the session's tasks block; its tokens are reserved out of
  // the room the fit gives the rest, so the served context still fits `usable`.
  const tasks = await servedTasksBlock(
    resources,
    session,
    reading,
    reading.snapshot === known.reading?.snapshot ? tasksBeside : null,
  );
  const reserve = tasks?.tokens ?? 0;
  const over = overUsable(snapshot, reserve);
  const fitted =
    request.fit === 'none' || !over
      ? { messages: context.messages, tokens: context.tokens, fit: over ? 'over' : 'view' }
      : await fitToUsable(resources, session, reading, reserve);
  const served = tasks
    ? {
        ...fitted,
        messages: withTasksBlock(fitted.messages, tasks, {
          summaryMessageIds: fitted.messages
            .filter((m) => m.summary && m.compactionId === context.compactionId)
            .map((m) => m.id),
          compactionId: context.compactionId ?? '',
        }),
        tokens: fitted.tokens + tasks.tokens,
      }
    : fitted;
  // Media parts hold references to their bytes: the messages served get them back, only those.
  const messages = await resolveMediaReferences(resources.db, target.tenantId, served.messages);
  return {
    messages: request.format === 'openai' ? toOpenAIMessages({ ...context, messages }) : messages,
    compactionId: context.compactionId,
    boundarySeq: context.boundarySeq,
    tokens: served.tokens,
    fit: served.fit as ContextFitKind,
    usable: snapshot.status.usable,
    activeCompaction: snapshot.status.activeCompaction,
  };
}

/**
 * The view with the images past the policy's media budget as markers (core `applyMediaBudget`;
 * kept images at most half the usable input): what the status counts (`mediaSavedTokens`).
 */
function withMediaBudget(reading: ContextReading): ContextReading {
  const { context, snapshot } = reading;
  const budgeted = applyMediaBudget(context.messages, mediaBudgetOf(snapshot.policy, snapshot.status.usable));
  if (budgeted.elided === 0) return reading;
  return {
    snapshot,
    context: { ...context, messages: budgeted.messages, tokens: context.tokens - budgeted.savedTokens },
  };
}

/** The status and the view in one read-only snapshot, so the numbers describe these messages. */
async function readContext(db: Db, session: SessionRow, memos: ContextMemos | null): Promise<ContextReading> {
  return db.transaction(
    async (tx) => {
      const snapshot = await statusSnapshot(tx, session);
      const { pinSystemMessages } = snapshot.policy;
      const rows = await viewRows(tx, session.pk, pinSystemMessages, memos);
      const context = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : [], {
        pinSystemMessages,
      });
      return { snapshot, context };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/**
 * The view alone, read in one statement (one snapshot), with the caller's status when the two
 * describe the same messages: the same latest compaction, message count, newest message and
 * stored tokens. Anything written since the status was read (another client's append or patch,
 * a compaction or prune that completed) shows in one of these, and then null: the caller reads
 * both again in one transaction.
 */
async function readContextAfter(
  db: Db,
  { session, snapshot }: FreshReading,
  memos: ContextMemos | null,
): Promise<ContextReading | null> {
  const { pinSystemMessages } = snapshot.policy;
  const rows = await viewRows(db, session.pk, pinSystemMessages, memos);
  const context = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : [], {
    pinSystemMessages,
  });
  const { stats, latestCompleted } = snapshot;
  const same =
    context.compactionId === (latestCompleted?.id ?? null) &&
    rows.messages.length === stats.contextMessages &&
    (rows.messages.at(-1)?.seq ?? null) === stats.newestSeq &&
    context.tokens === stats.storedTokens;
  return same ? { snapshot, context } : null;
}

/** The view's rows in one statement: through the memos (only what changed is sent and mapped), or all of them. */
function viewRows(
  db: DbOrTx,
  sessionPk: number,
  pinSystemMessages: boolean,
  memos: ContextMemos | null,
): Promise<ContextRows> {
  return memos
    ? memos.load(db, sessionPk, pinSystemMessages)
    : loadContextRows(db, sessionPk, { pinSystemMessages });
}

/** The status's own verdict: the estimated next prompt (plus `reserve` tokens served besides) exceeds the usable input. */
function overUsable({ status }: StatusSnapshot, reserve = 0): boolean {
  return status.usable !== null && status.tokens + reserve > status.usable;
}

/**
 * The tasks block of a view after a boundary (null before the first compaction, or without
 * tasks): at most a tenth of the usable input (four characters a token), counted exactly.
 */
async function servedTasksBlock(
  resources: Pick<SessionResources, 'db' | 'tokenizerFor'>,
  session: SessionRow,
  { snapshot, context }: ContextReading,
  readAlready: ReturnType<typeof readTasksBlock> | null,
): Promise<{ text: string; tokens: number } | null> {
  if (context.compactionId === null) return null;
  const read = await (readAlready ?? readTasksBlock(resources, session, snapshot));
  if (!read || read.block.text === '') return null;
  return { text: read.block.text, tokens: fitCounters(resources, session.modelId).text(read.block.text) };
}

/** The session's tasks block, within the share of `snapshot`'s usable input it may take. */
function readTasksBlock(
  resources: Pick<SessionResources, 'db'>,
  session: SessionRow,
  snapshot: StatusSnapshot,
): ReturnType<typeof tasksBlockFor> {
  const usable = snapshot.status.usable ?? 1_000_000;
  return tasksBlockFor(resources.db, session.pk, Math.max(1_000, Math.floor(usable * 0.4)));
}
