/** The task registry's statements: forward-only upserts, the block's bounded read, pages, per-session scope. */
import { describe, expect, it } from 'vitest';
import type { TaskRecord } from '@compactor/core';
import { createTestSession } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import {
  countRunningTasks,
  findSessionTask,
  finishSessionTask,
  listSessionTasks,
  selectTasksForBlock,
  upsertSessionTasks,
} from './session-tasks';

const t = useTestDatabase();

const record = (i: number, over: Partial<TaskRecord> = {}): TaskRecord => ({
  callId: `call_${i}`,
  tool: 'Task',
  status: 'running',
  asked: `prompt: job ${i}`,
  dedupeKey: `k${i}`,
  messageId: `m${i}`,
  seq: i,
  startedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  finishedAt: null,
  outcome: null,
  ...over,
});

describe('session tasks', () => {
  it('records, finishes forward only, reads the block bounded and pages by (seq, call id)', async () => {
    const session = await createTestSession(t.db);
    const other = await createTestSession(t.db, 'tenant-b');
    await upsertSessionTasks(
      t.db,
      session,
      Array.from({ length: 530 }, (_, i) => record(i)),
    );
    await upsertSessionTasks(t.db, other, [record(1)]);
    // A re-post of the same call as running does not undo a finish.
    await finishSessionTask(t.db, session.pk, {
      callId: 'call_3',
      status: 'completed',
      outcome: 'ok',
      at: '2026-02-01T00:00:00.000Z',
      deliveredSeq: 900,
    });
    await upsertSessionTasks(t.db, session, [record(3)]);
    expect(await findSessionTask(t.db, session.pk, 'call_3')).toMatchObject({
      status: 'completed',
      outcome: 'ok',
      deliveredSeq: 900,
    });
    await finishSessionTask(t.db, session.pk, {
      callId: 'call_3',
      status: 'error',
      outcome: 'late',
      at: '2026-03-01T00:00:00.000Z',
    });
    expect(await findSessionTask(t.db, session.pk, 'call_3')).toMatchObject({ status: 'completed' });

    const block = await selectTasksForBlock(t.db, session.pk);
    expect(block.running).toBe(501);
    expect(block.finished).toBe(1);
    expect(await countRunningTasks(t.db, session.pk)).toBe(529);
    expect(await findSessionTask(t.db, other.pk, 'call_3')).toBeNull();

    const first = await listSessionTasks(t.db, session.pk, { after: null, limit: 500 });
    expect(first.tasks[0]!.callId).toBe('call_529');
    const second = await listSessionTasks(t.db, session.pk, { after: first.next, limit: 500 });
    expect(second.next).toBeNull();
    expect(first.tasks.length + second.tasks.length).toBe(530);
  });
});
