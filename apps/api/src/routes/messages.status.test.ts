import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { completeCompaction, findSession, insertCompaction } from '@compactor/db';
import { useTestApi } from '../test-support/api';

/**
 * An append reads the session's status in its own round trip, written for the session (pk) and
 * the policy's pinning this process saw last time. These are the cases where that guess is
 * wrong; the status returned must still be the one a GET shows right after.
 */
const api = useTestApi();

const text = (id: string, role: 'system' | 'user' | 'assistant', words: string) => ({
  id,
  role,
  ...(role === 'assistant' ? { finish: 'stop' } : {}),
  parts: [{ type: 'text', text: words }],
});

async function create(id: string) {
  const response = await api.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: 'gpt-4o' } },
  });
  expect(response.statusCode).toBe(201);
}

async function append(session: string, messages: unknown[]) {
  const response = await api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: { messages },
  });
  expect(response.statusCode).toBe(201);
  return response.json() as {
    status: { tokens: number; contextMessages: number; messagesSinceCompaction: number; cannotFit: boolean };
  };
}

async function statusNow(session: string) {
  return (await api.request({ method: 'GET', url: `/v1/sessions/${session}` })).json().status as Record<
    string,
    unknown
  >;
}

/** A completed compaction whose boundary leaves the system message before it (pinned or not). */
async function compactBefore(sessionId: string, boundarySeq: number) {
  const session = await findSession(api.database.db, 'tenant-a', sessionId);
  const row = await insertCompaction(api.database.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk: session!.pk,
    reason: 'manual',
    strategy: 'summarize',
    status: 'running',
  });
  await completeCompaction(api.database.db, {
    compactionId: row!.id,
    sessionPk: session!.pk,
    boundarySeq,
    summaryMessages: [
      {
        id: `sum_${row!.id}`,
        role: 'assistant',
        parts: [{ type: 'text', text: 'the summary', tokens: 20 }],
        finish: 'stop',
        error: null,
        usage: null,
        createdAt: new Date(),
        metadata: {},
        contentHash: 'x',
      },
    ],
    tokensBefore: 100,
    messagesBefore: 4,
    finishedAt: new Date(),
  });
}

describe('the status an append returns', () => {
  it('is the one a GET shows next, append after append', async () => {
    await create('st-same');
    for (let turn = 1; turn <= 4; turn++) {
      const { status } = await append('st-same', [
        text(`u${turn}`, 'user', `request number ${turn}`),
        text(`a${turn}`, 'assistant', `answer number ${turn} with a few more words`),
      ]);
      expect(status).toEqual(await statusNow('st-same'));
      expect(status.contextMessages).toBe(turn * 2);
    }
  });

  it("follows a change of the policy's pinning made by another replica", async () => {
    await create('st-pin');
    await append('st-pin', [
      text('s1', 'system', 'you are a careful agent'),
      text('u1', 'user', 'first request'),
      text('a1', 'assistant', 'first answer'),
      text('u2', 'user', 'second request'),
    ]);
    await compactBefore('st-pin', 4);
    // Pinned (the default): the system message, the summary, u2, then u3.
    const pinned = await append('st-pin', [text('u3', 'user', 'third request')]);
    expect(pinned.status.contextMessages).toBe(4);
    expect(pinned.status).toEqual(await statusNow('st-pin'));
    // Another replica unpins system messages: this process still expects them pinned.
    await api.database.database.pool.query(
      `update sessions set policy = '{"pinSystemMessages": false}'::jsonb where id = 'st-pin'`,
    );
    const unpinned = await append('st-pin', [text('u4', 'user', 'fourth request')]);
    expect(unpinned.status.contextMessages).toBe(4);
    expect(unpinned.status).toEqual(await statusNow('st-pin'));
  });

  it("is the new session's after the old one was deleted and its id taken again", async () => {
    await create('st-again');
    await append('st-again', [
      text('u1', 'user', 'one'),
      text('u2', 'user', 'two'),
      text('u3', 'user', 'three'),
    ]);
    expect((await api.request({ method: 'DELETE', url: '/v1/sessions/st-again' })).statusCode).toBe(204);
    await create('st-again');
    const { status } = await append('st-again', [text('u4', 'user', 'four')]);
    expect(status.contextMessages).toBe(1);
    expect(status).toEqual(await statusNow('st-again'));
  });
});

describe('a system prompt too large for the window', () => {
  async function createSmall(id: string) {
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { id, model: { id: 'local-model', contextWindow: 4096, maxOutputTokens: 1024 } },
    });
    expect(response.statusCode).toBe(201);
  }

  it('the status says no compaction can make the session fit (pinnedTokens > usable)', async () => {
    await createSmall('huge-prompt');
    const appended = await append('huge-prompt', [
      text('sys', 'system', 'Follow every rule of the handbook. '.repeat(700)),
      text('q', 'user', 'hello'),
    ]);
    expect(appended.status).toMatchObject({ usable: 3072, cannotFit: true });
    const status = await statusNow('huge-prompt');
    expect(status.pinnedTokens).toBeGreaterThan(3072);
    expect(status.cannotFit).toBe(true);
  });

  it('a prompt that fits is counted, and the session can fit', async () => {
    await createSmall('small-prompt');
    await append('small-prompt', [text('sys', 'system', 'Be brief.'), text('q', 'user', 'hello')]);
    const status = await statusNow('small-prompt');
    expect(status).toMatchObject({ cannotFit: false, overflow: false });
    expect(status.pinnedTokens).toBeGreaterThan(0);
    expect(status.pinnedTokens).toBeLessThan(status.tokens as number);
  });
});
