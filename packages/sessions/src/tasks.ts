/**
 * A session's sub-agents and background tasks (core tasks/, docs/TASKS.md): recorded on the
 * writes that carry them, rendered as the "tasks" block of the context after a compaction
 * boundary, listed by `GET /v1/sessions/:id/tasks`.
 */
import {
  duplicateRunningTasks,
  isFinishedStatus,
  renderTasksBlock,
  taskPartsOf,
  taskRecordFromPart,
  taskToolRules,
  type Message,
  type TaskRecord,
  type TaskToolRule,
  type ToolPart,
} from '@compactor/core';
import {
  countRunningTasks,
  findSession,
  listSessionTasks,
  selectAppendedTaskCalls,
  selectTasksForBlock,
  upsertSessionTasks,
  type AppendedMessage,
  type Db,
  type DbOrTx,
  type NewMessage,
  type SessionRow,
  type SessionTaskRow,
  type TaskCursor,
} from '@compactor/db';
import type { PolicyInput } from '@compactor/contract';
import { resolveStoredPolicy } from '@compactor/workflow';
import { InvalidInput, SessionNotFound } from './errors';
import type { SessionTarget } from './session-target';
import type { OperationLog, SessionResources } from './resources';

/** A task's change as the session's event stream announces it (`task.started`, `task.finished`). */
export interface TaskEvent {
  type: 'task.started' | 'task.finished';
  callId: string;
  tool: string;
  status: TaskRecord['status'];
}

/** The session policy's task rules. */
export function sessionTaskRules(session: Pick<SessionRow, 'policy'>): TaskToolRule[] {
  return taskToolRules(resolveStoredPolicy(session.policy as PolicyInput));
}

function eventsOf(records: readonly TaskRecord[], started: boolean): TaskEvent[] {
  return records
    .map((r): TaskEvent => ({
      type: isFinishedStatus(r.status) ? 'task.finished' : 'task.started',
      callId: r.callId,
      tool: r.tool,
      status: r.status,
    }))
    .filter((e) => started || e.type === 'task.finished');
}

/** Announces task events (best effort: the registry is the record, the events are news). */
async function announce(
  resources: SessionResources,
  session: SessionRow,
  events: TaskEvent[],
  log: OperationLog,
) {
  if (events.length === 0 || !resources.jobs.tasksChanged) return;
  try {
    await resources.jobs.tasksChanged(session, events);
  } catch (error) {
    log.warn(
      { sessionId: session.id, err: { name: (error as Error).name } },
      'task events could not be announced',
    );
  }
}

/**
 * Records the task calls an append created (none: no statement at all for a parsed batch) and
 * announces them. Runs in the session's write queue, after the append committed.
 */
export async function recordAppendedTasks(
  resources: SessionResources,
  session: SessionRow,
  batch: NewMessage[] | { callIds: string[] },
  appended: AppendedMessage[],
  log: OperationLog,
): Promise<void> {
  const rules = sessionTaskRules(session);
  const at = resources.clock().toISOString();
  let messages: Array<Pick<Message, 'id' | 'seq' | 'role' | 'parts' | 'metadata'>>;
  // Re-posted messages are recorded again (a no-op upsert, or the record a failed write missed),
  // announced only when created.
  const created = new Set(appended.filter((m) => m.created).map((m) => m.id));
  if (Array.isArray(batch)) {
    const seqOf = new Map(appended.map((m) => [m.id, m.seq]));
    messages = batch.flatMap((m) => {
      const seq = seqOf.get(m.id);
      return seq === undefined ? [] : [{ id: m.id, seq, role: m.role, parts: m.parts, metadata: m.metadata }];
    });
  } else {
    if (batch.callIds.length === 0) return;
    const seqs = appended.map((m) => m.seq);
    if (seqs.length === 0) return;
    messages = await selectAppendedTaskCalls(resources.db, session.pk, {
      fromSeq: Math.min(...seqs),
      toSeq: Math.max(...seqs),
      toolNames: rules.map((r) => r.name),
    });
  }
  const records = messages.flatMap((m) =>
    taskPartsOf(m, rules).map((part) => taskRecordFromPart(part, { messageId: m.id, seq: m.seq, at })),
  );
  if (records.length === 0) return;
  const changed = await upsertSessionTasks(resources.db, session, records);
  const news = records.filter((r) => created.has(r.messageId) && changed.has(r.callId));
  await announce(resources, session, eventsOf(news, true), log);
}

/**
 * Records the task calls a PATCH changed (`callIds`) in `message` as stored afterwards: a call
 * added to a streamed turn starts a task, a result finishes one.
 */
export async function recordPatchedTasks(
  resources: SessionResources,
  session: SessionRow,
  message: Pick<Message, 'id' | 'seq' | 'role' | 'parts' | 'metadata'>,
  callIds: ReadonlySet<string>,
  log: OperationLog,
): Promise<void> {
  if (callIds.size === 0) return;
  const at = resources.clock().toISOString();
  const records = taskPartsOf(message, sessionTaskRules(session))
    .filter((part) => callIds.has(part.callId))
    .map((part) => taskRecordFromPart(part, { messageId: message.id, seq: message.seq, at }));
  if (records.length === 0) return;
  const changed = await upsertSessionTasks(resources.db, session, records);
  await announce(
    resources,
    session,
    eventsOf(
      records.filter((r) => changed.has(r.callId)),
      true,
    ),
    log,
  );
}

/** Announces the late results a PATCH delivered. */
export async function announceFinishedTasks(
  resources: SessionResources,
  session: SessionRow,
  parts: readonly ToolPart[],
  log: OperationLog,
): Promise<void> {
  await announce(
    resources,
    session,
    parts.map((p) => ({ type: 'task.finished', callId: p.callId, tool: p.tool, status: p.status })),
    log,
  );
}

/** The block a served context after a boundary carries, at most `maxChars` long, or null with no task. */
export async function tasksBlockFor(db: DbOrTx, sessionPk: number, maxChars: number) {
  const read = await selectTasksForBlock(db, sessionPk);
  if (read.tasks.length === 0) return null;
  // The block lists 500 running tasks at most; past the 501 read, the rest are counted.
  const more = read.running > 500 ? (await countRunningTasks(db, sessionPk)) - read.running : 0;
  const block = renderTasksBlock(read.tasks, { maxChars });
  if (more > 0)
    block.text = block.text.replace(
      /\((\d+) more running tasks not listed/,
      (_, n: string) => `(${Number(n) + more} more running tasks not listed`,
    );
  return { block, running: read.tasks.filter((t) => !isFinishedStatus(t.status)).map((t) => t.callId) };
}

/** A task as the API answers it. */
export interface TaskAnswer extends TaskRecord {
  deliveredSeq: number | null;
  duplicateOf: string | null;
}

/** `GET /v1/sessions/:id/tasks`: a page of the session's tasks, newest call first. */
export async function sessionTasks(
  db: Db,
  target: SessionTarget,
  query: { limit: number; cursor: string | null },
): Promise<{ tasks: TaskAnswer[]; running: number; duplicates: number; nextCursor: string | null }> {
  const session = await findSession(db, target.tenantId, target.id);
  if (!session) throw new SessionNotFound();
  const after = decodeCursor(query.cursor);
  const [page, block, running] = await Promise.all([
    listSessionTasks(db, session.pk, { after, limit: query.limit }),
    selectTasksForBlock(db, session.pk),
    countRunningTasks(db, session.pk),
  ]);
  const duplicates = duplicateRunningTasks(block.tasks);
  return {
    tasks: page.tasks.map((t: SessionTaskRow) => ({ ...t, duplicateOf: duplicates.get(t.callId) ?? null })),
    running,
    duplicates: duplicates.size,
    nextCursor: page.next ? encodeCursor(page.next) : null,
  };
}

/** The status's `tasks`: running tasks and duplicate dispatches among them. */
export async function taskCounts(
  db: DbOrTx,
  sessionPk: number,
): Promise<{ running: number; duplicates: number }> {
  const block = await selectTasksForBlock(db, sessionPk);
  const running = block.running > 500 ? await countRunningTasks(db, sessionPk) : block.running;
  return { running, duplicates: duplicateRunningTasks(block.tasks).size };
}

function encodeCursor(cursor: TaskCursor): string {
  return Buffer.from(JSON.stringify([cursor.seq, cursor.callId])).toString('base64url');
}

function decodeCursor(cursor: string | null): TaskCursor | null {
  if (cursor === null) return null;
  try {
    const [seq, callId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (Number.isInteger(seq) && typeof callId === 'string') return { seq: seq as number, callId };
  } catch {
    // fall through: an unreadable cursor is the client's error
  }
  throw InvalidInput.ofIssues([{ path: 'query.cursor', message: 'not a cursor this API handed out' }]);
}
