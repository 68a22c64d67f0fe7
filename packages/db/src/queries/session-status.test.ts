import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '@compactor/testing';
import { appendMessages } from '../operations/append-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { findSessionCompactions, insertCompaction } from './compactions';
import { contextTokenStats } from './context-tokens';
import { sessionStatusInputs } from './session-status';

const t = useTestDatabase();

/** The one statement answers what the two it replaces answer, at every state a session passes through. */
async function expectSameAsSeparate(sessionPk: number, pinSystemMessages = true) {
  const combined = await sessionStatusInputs(t.db, sessionPk, { pinSystemMessages });
  expect(combined).toEqual({
    stats: await contextTokenStats(t.db, sessionPk, { pinSystemMessages }),
    ...(await findSessionCompactions(t.db, sessionPk)),
  });
  return combined;
}

const finish = (id: string, status: string, at: string) =>
  t.db.execute(`update compactions set status = '${status}', finished_at = '${at}' where id = '${id}'`);

describe('sessionStatusInputs', () => {
  it('equals contextTokenStats and findSessionCompactions, with none, one, two and three compactions', async () => {
    const session = await createTestSession(t.db);
    const empty = await expectSameAsSeparate(session.pk);
    expect(empty).toMatchObject({ active: null, lastFinished: null, latestCompleted: null });
    expect(empty.stats).toMatchObject({ storedTokens: 0, contextMessages: 0, report: null });

    await appendMessages(t.db, session.pk, [
      newMessage('system', [text('you are a coding agent', 6)]),
      newMessage('user', [text('fix the test', 4)]),
      newMessage('assistant', [text('reading', 2), tool('call_1', 'x'.repeat(400))], {
        finish: 'stop',
        usage: { input: 500, output: 20 },
      }),
    ]);
    const grown = await expectSameAsSeparate(session.pk);
    expect(grown.stats.contextMessages).toBe(3);
    expect(grown.stats.report).toMatchObject({ usage: { input: 500, output: 20 } });
    await expectSameAsSeparate(session.pk, false);

    const completed = await insertCompaction(t.db, {
      id: `cmp_done_${session.pk}`,
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
    });
    await finish(completed!.id, 'completed', '2026-01-01T00:00:00Z');
    expect(await expectSameAsSeparate(session.pk)).toMatchObject({
      active: null,
      lastFinished: { id: completed!.id },
      latestCompleted: { id: completed!.id },
    });

    const failed = await insertCompaction(t.db, {
      id: `cmp_failed_${session.pk}`,
      sessionPk: session.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    await finish(failed!.id, 'failed', '2026-01-02T00:00:00Z');
    await insertCompaction(t.db, {
      id: `cmp_active_${session.pk}`,
      sessionPk: session.pk,
      reason: 'manual',
      strategy: 'summarize',
    });
    expect(await expectSameAsSeparate(session.pk)).toMatchObject({
      active: { id: `cmp_active_${session.pk}`, status: 'pending' },
      lastFinished: { id: failed!.id, status: 'failed' },
      latestCompleted: { id: completed!.id, status: 'completed' },
    });
  });

  it('reads only the session it is asked about', async () => {
    const other = await createTestSession(t.db);
    await appendMessages(t.db, other.pk, [newMessage('user', [text('another tenant', 3)])]);
    await insertCompaction(t.db, {
      id: `cmp_other_${other.pk}`,
      sessionPk: other.pk,
      reason: 'manual',
      strategy: 'summarize',
    });
    const session = await createTestSession(t.db);
    expect(await expectSameAsSeparate(session.pk)).toMatchObject({
      active: null,
      stats: { contextMessages: 0 },
    });
  });
});
