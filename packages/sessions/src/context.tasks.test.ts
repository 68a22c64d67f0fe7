/**
 * The tasks block in sessionContext on a real database, without the API or workers: after a
 * boundary the running tasks are named in the context served, and the block's tokens come out
 * of `usable`, also on the turn a compaction is running and the view is fitted at read time.
 */
import { describe, expect, it } from 'vitest';
import { taskRecordFromPart, type ToolPart } from '@compactor/core';
import {
  completeCompaction,
  insertCompaction,
  prepareMessages,
  upsertSessionTasks,
  type MessageInput,
} from '@compactor/db';
import { appendTestMessages, insertTestSession, useTestDatabase } from '@compactor/db/testing';
import type { SessionEventSource } from '@compactor/queue';
import { getTokenizer } from '@compactor/tokenizer';
import { sessionContext } from './context';
import { statusSnapshot } from './status';

const database = useTestDatabase();
const tokenizer = getTokenizer('o200k_base');
const noEvents: SessionEventSource = {
  subscribe: async () => () => undefined,
  since: async () => [],
  close: async () => undefined,
};
const resources = () => ({ db: database.db, tokenizerFor: () => tokenizer, events: noEvents });

const task = (n: number): ToolPart =>
  ({
    type: 'tool',
    callId: `task_${n}`,
    tool: 'Task',
    status: 'running',
    input: { description: `audit ${n}`, prompt: `Audit module ${n} for buffered rows.` },
  }) as ToolPart;

/** Turns of a bash call with a long output each, so that the view is over a 3,000-token usable. */
const turn = (n: number): MessageInput[] => [
  { role: 'user', parts: [{ type: 'text', text: `Request ${n}: port the next module.` }] },
  {
    role: 'assistant',
    finish: 'tool-calls',
    parts: [
      {
        type: 'tool',
        callId: `call_${n}`,
        tool: 'bash',
        status: 'completed',
        input: { command: `npm test module-${n}` },
        output: Array.from({ length: 60 }, (_, i) => `PASS module-${n}/case-${i}.test.ts`).join('\n'),
      },
    ],
  },
];

describe('sessionContext with running tasks behind a boundary', () => {
  it('names them in the context served and keeps it within usable, a compaction running or not', async () => {
    const session = await insertTestSession(database.db, {
      tenantId: 'tenant-a',
      contextWindow: 4_000,
      policy: { auto: false },
    });
    const tasks = [1, 2, 3].map(task);
    const history: MessageInput[] = [
      { role: 'user', parts: [{ type: 'text', text: 'Port the ledger module by module.' }] },
      { role: 'assistant', finish: 'tool-calls', parts: tasks },
      ...[1, 2, 3, 4, 5, 6, 7, 8].flatMap(turn),
    ];
    const stored = await prepareMessages(history, tokenizer, new Date());
    await appendTestMessages(database.db, session.pk, stored);
    const at = new Date().toISOString();
    await upsertSessionTasks(
      database.db,
      session,
      tasks.map((part) => taskRecordFromPart(part, { messageId: stored[1]!.id, seq: 2, at })),
    );
    const compaction = await insertCompaction(database.db, {
      id: 'cmp_tasks_1',
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
    });
    const summary = await prepareMessages(
      [{ role: 'assistant', parts: [{ type: 'text', text: 'Summary: nothing kept.' }] }],
      tokenizer,
      new Date(),
    );
    await completeCompaction(database.db, {
      compactionId: compaction!.id,
      sessionPk: session.pk,
      summaryMessages: summary,
      boundarySeq: 5,
      tokensBefore: 9_000,
      messagesBefore: history.length,
      finishedAt: new Date(),
    });

    const read = () =>
      sessionContext(
        resources(),
        { tenantId: 'tenant-a', id: session.id },
        { format: 'native', fit: 'auto', waitMs: 0 },
      );
    const after = await read();
    expect(after.usable).toBe(3_000);
    expect(after.tokens).toBeLessThanOrEqual(3_000);
    const text = JSON.stringify(after.messages);
    for (const n of [1, 2, 3]) expect(text.split(`[task task_${n}]`)).toHaveLength(2);
    // With the caller's own status reading (a drop-in request's last write), the block is read
    // beside the view: the same context is served.
    const reading = { session, snapshot: await statusSnapshot(database.db, session) };
    const beside = await sessionContext(
      resources(),
      { tenantId: 'tenant-a', id: session.id },
      { format: 'native', fit: 'auto', waitMs: 0 },
      { reading },
    );
    expect(beside).toEqual(after);

    // The next compaction is running (the view is still over usable): fitted at read time, the
    // block's tokens reserved out of usable, every running task still named once.
    await insertCompaction(database.db, {
      id: 'cmp_tasks_2',
      sessionPk: session.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    await appendTestMessages(
      database.db,
      session.pk,
      await prepareMessages([9, 10, 11, 12].flatMap(turn), tokenizer, new Date()),
    );
    const during = await read();
    expect(during.fit).toBe('interim');
    expect(during.tokens).toBeLessThanOrEqual(3_000);
    const duringText = JSON.stringify(during.messages);
    for (const n of [1, 2, 3]) expect(duringText.split(`[task task_${n}]`)).toHaveLength(2);
  });
});
