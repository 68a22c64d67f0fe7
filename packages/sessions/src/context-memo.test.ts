/**
 * The context memo reads what a full read gives, reusing only messages whose rows did not change:
 * after an append only the new message is sent; a patch, a prune mark or another pinning sends
 * the messages it touched (or all of them), and the budget forgets whole views.
 */
import { describe, expect, it } from 'vitest';
import { loadContextRows, selectContextDelta } from '@compactor/db';
import { ContextMemos } from './context-memo';
import { parsedMessages, newSession, userText, useTestSessions } from './test-support/session-resources';

const t = useTestSessions();
const target = (id: string) => ({ tenantId: 'tenant-a', id });

const call = (callId: string) => ({
  id: `a-${callId}`,
  role: 'assistant',
  finish: 'tool-calls',
  parts: [{ type: 'tool', callId, tool: 'read', status: 'pending', input: { path: `src/${callId}.ts` } }],
});

/** Counts the rows the memo's statement sends (messages whose rows it had not kept). */
async function sentRows(memos: ContextMemos, sessionPk: number, pin = true) {
  const kept = (memos as unknown as { memos: Map<number, { byVersion: Map<string, unknown> }> }).memos;
  const known = [...(kept.get(sessionPk)?.byVersion.keys() ?? [])];
  return (await selectContextDelta(t.database.db, sessionPk, { pinSystemMessages: pin, known })).messages
    .length;
}

describe('ContextMemos', () => {
  it('reads what a full read gives, and after an append sends only the new message', async () => {
    const session = await newSession(t, 'tenant-a', 'm-append');
    await t.messages.append(target('m-append'), parsedMessages([userText(20, 'u1'), call('c1')]), t.log);
    const memos = new ContextMemos();
    const first = await memos.load(t.database.db, session.pk, true);
    expect(first).toEqual(await loadContextRows(t.database.db, session.pk));
    await t.messages.append(target('m-append'), parsedMessages([userText(10, 'u2')]), t.log);
    expect(await sentRows(memos, session.pk)).toBe(1);
    const second = await memos.load(t.database.db, session.pk, true);
    expect(second).toEqual(await loadContextRows(t.database.db, session.pk));
    // The unchanged messages are the ones read before, not read again.
    expect(second.messages[0]).toBe(first.messages[0]);
    expect(second.messages).toHaveLength(3);
  });

  it('sends a patched message again, and only that one', async () => {
    const session = await newSession(t, 'tenant-a', 'm-patch');
    await t.messages.append(
      target('m-patch'),
      parsedMessages([userText(20, 'u1'), call('c1'), userText(5, 'u2')]),
      t.log,
    );
    const memos = new ContextMemos();
    const before = await memos.load(t.database.db, session.pk, true);
    await t.messages.finish(
      target('m-patch'),
      'a-c1',
      {
        parts: [
          {
            type: 'tool',
            callId: 'c1',
            tool: 'read',
            status: 'completed',
            input: { path: 'src/c1.ts' },
            output: 'done',
            error: null,
          },
        ],
      },
      t.log,
    );
    expect(await sentRows(memos, session.pk)).toBe(1);
    const after = await memos.load(t.database.db, session.pk, true);
    expect(after).toEqual(await loadContextRows(t.database.db, session.pk));
    expect(after.messages[1]).not.toBe(before.messages[1]);
    expect(after.messages[0]).toBe(before.messages[0]);
  });

  it('sends a message whose part was marked pruned, and reads everything for another pinning', async () => {
    const session = await newSession(t, 'tenant-a', 'm-prune');
    await t.messages.append(
      target('m-prune'),
      parsedMessages([
        { role: 'system', parts: [{ type: 'text', text: 'Be brief.' }] },
        userText(20, 'u1'),
        {
          id: 'a-c1',
          role: 'assistant',
          finish: 'tool-calls',
          parts: [
            {
              type: 'tool',
              callId: 'c1',
              tool: 'read',
              status: 'completed',
              input: {},
              output: 'x'.repeat(500),
            },
          ],
        },
      ]),
      t.log,
    );
    const memos = new ContextMemos();
    await memos.load(t.database.db, session.pk, true);
    const { rows } = await t.database.database.pool.query<{ seq: number }>(
      `select seq from messages where session_pk = $1 and id = 'a-c1'`,
      [session.pk],
    );
    await t.database.database.pool.query(
      `insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by) values ($1, $2, 0, now(), 'prn_test')`,
      [session.pk, rows[0]!.seq],
    );
    expect(await sentRows(memos, session.pk)).toBe(1);
    const pruned = await memos.load(t.database.db, session.pk, true);
    expect(pruned).toEqual(await loadContextRows(t.database.db, session.pk));
    expect(pruned.messages.at(-1)!.parts[0]).toMatchObject({ output: null });
    // Kept for one pinning: the other reads every message.
    expect(await memos.load(t.database.db, session.pk, false)).toEqual(
      await loadContextRows(t.database.db, session.pk, { pinSystemMessages: false }),
    );
  });

  it('keeps no view larger than its share of the budget, and forgets the oldest past it', async () => {
    const pks: number[] = [];
    for (const id of ['m-budget-1', 'm-budget-2', 'm-budget-3', 'm-budget-4', 'm-budget-5']) {
      pks.push((await newSession(t, 'tenant-a', id)).pk);
      await t.messages.append(target(id), parsedMessages([userText(200, 'same')]), t.log);
    }
    const probe = new ContextMemos(1_000_000);
    await probe.load(t.database.db, pks[0]!, true);
    const weight = probe.size;
    expect(weight).toBeGreaterThan(0);

    // Each view may take a quarter of the budget: four fit, the fifth pushes the first out.
    const memos = new ContextMemos(weight * 4);
    for (const pk of pks) await memos.load(t.database.db, pk, true);
    expect(memos.size).toBe(weight * 4);
    expect(await sentRows(memos, pks[0]!)).toBe(1);
    expect(await sentRows(memos, pks[4]!)).toBe(0);

    const tooSmall = new ContextMemos(weight * 4 - 1);
    await tooSmall.load(t.database.db, pks[0]!, true);
    expect(tooSmall.size).toBe(0);
  });
});
