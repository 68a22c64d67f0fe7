import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { findSessionCompactions, insertCompaction } from './compactions';
import { contextTokenStats } from './context-tokens';
import { sessionStatusInputs } from './session-status';
import { useTestDatabase } from '../test-support/test-database';

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

/** A compaction of the session, pending, or ended as `status` at `at`; returns its id. */
async function addCompaction(sessionPk: number, name: string, ended?: { status: string; at: string }) {
  const id = `cmp_${name}_${sessionPk}`;
  await insertCompaction(t.db, { id, sessionPk, reason: 'manual', strategy: 'summarize' });
  if (ended) {
    await t.db.execute(
      `update compactions set status = '${ended.status}', finished_at = '${ended.at}' where id = '${id}'`,
    );
  }
  return id;
}

describe('sessionStatusInputs', () => {
  it('equals contextTokenStats and findSessionCompactions, with none, one, two and three compactions', async () => {
    const session = await createTestSession(t.db);
    const empty = await expectSameAsSeparate(session.pk);
    expect(empty).toMatchObject({ active: null, lastFinished: null, latestCompleted: null });
    expect(empty.stats).toMatchObject({ storedTokens: 0, contextMessages: 0, report: null });

    await appendTestMessages(t.db, session.pk, [
      newMessage('system', [text('you are a coding agent', 6)]),
      newMessage('user', [text('fix the test', 4)]),
      newMessage('assistant', [text('reading', 2), tool('call_1', 'x'.repeat(400))], {
        finish: 'stop',
        usage: { input: 500, output: 20, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
      }),
    ]);
    const grown = await expectSameAsSeparate(session.pk);
    expect(grown.stats.contextMessages).toBe(3);
    expect(grown.stats.report).toMatchObject({ usage: { input: 500, output: 20 } });
    await expectSameAsSeparate(session.pk, false);

    const completed = await addCompaction(session.pk, 'done', {
      status: 'completed',
      at: '2026-01-01T00:00:00Z',
    });
    expect(await expectSameAsSeparate(session.pk)).toMatchObject({
      active: null,
      lastFinished: { id: completed },
      latestCompleted: { id: completed },
    });

    const failed = await addCompaction(session.pk, 'failed', {
      status: 'failed',
      at: '2026-01-02T00:00:00Z',
    });
    const active = await addCompaction(session.pk, 'active');
    expect(await expectSameAsSeparate(session.pk)).toMatchObject({
      active: { id: active, status: 'pending' },
      lastFinished: { id: failed, status: 'failed' },
      latestCompleted: { id: completed, status: 'completed' },
    });
  });

  it('reads only the session it is asked about', async () => {
    const other = await createTestSession(t.db);
    await appendTestMessages(t.db, other.pk, [newMessage('user', [text('another tenant', 3)])]);
    await addCompaction(other.pk, 'other');
    const session = await createTestSession(t.db);
    expect(await expectSameAsSeparate(session.pk)).toMatchObject({
      active: null,
      stats: { contextMessages: 0 },
    });
  });
});
