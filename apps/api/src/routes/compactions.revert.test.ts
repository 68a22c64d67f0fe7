/**
 * Reverting a compaction: the context and status served before it, restored message for
 * message and token for token; only the latest completed, non-reverted compaction of a session;
 * 409s that say why; another tenant's compaction is a 404; the event; the auto trigger after it.
 */
import { describe, expect, it } from 'vitest';
import { generateCodingSession } from '@compactor/testing/fixtures';
import type { SessionEventMap } from '@compactor/workflow';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';
import { compactionsOf, newSession, sessionPk } from '../test-support/helpers';
import { useInProcessWorker } from '../test-support/in-process-worker';

const reverted: Array<{
  sessionId: string;
  compactionId: string;
  data: SessionEventMap['compaction.reverted'];
}> = [];
const api = useTestApi({
  jobs: (jobs) => ({
    ...jobs,
    compactionReverted: async (session, compaction, data) => {
      reverted.push({ sessionId: session.id, compactionId: compaction.id, data });
      await jobs.compactionReverted(session, compaction, data);
    },
  }),
});
const worker = useInProcessWorker(api);

const PRUNING_POLICY = { policy: { pruning: { protectTokens: 100, minimumTokens: 1, protectUserTurns: 1 } } };

async function runAsWorker(compactionId: string): Promise<void> {
  await worker.run(compactionId);
}

const get = (url: string, key?: string) => api.request({ method: 'GET', url, ...(key ? { key } : {}) });
const revert = (id: string, key?: string) =>
  api.request({ method: 'POST', url: `/v1/compactions/${id}/revert`, ...(key ? { key } : {}) });

/** What a client is served: both renderings of the context, and the status. */
async function served(session: string) {
  const native = (await get(`/v1/sessions/${session}/context`)).json();
  const openai = (await get(`/v1/sessions/${session}/context?format=openai`)).json();
  const status = (await get(`/v1/sessions/${session}`)).json().status;
  return {
    ids: native.messages.map((m: { id: string }) => m.id),
    native: native.messages,
    openai: openai.messages,
    tokens: status.tokens,
    contextMessages: status.contextMessages,
    estimate: status.estimate,
  };
}

/** Appends a generated coding session's turns; returns their ids. */
async function appendCoding(session: string, turns: number, seed = 7): Promise<string[]> {
  const messages = generateCodingSession({ turns, seed }).map((m) => ({
    ...m,
    id: `${session}-${seed}-${m.id}`,
  }));
  const appended = await api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: { messages },
  });
  expect(appended.statusCode, appended.body).toBe(201);
  return messages.map((m) => m.id);
}

/** A manual compaction of the session, run to completion. */
async function compacted(session: string): Promise<string> {
  const requested = await api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/compactions`,
    payload: { keepRecentTokens: 500 },
  });
  expect(requested.statusCode, requested.body).toBe(202);
  await runAsWorker(requested.json().id);
  return requested.json().id;
}

const pruneMarks = async (session: string) => {
  const { rows } = await api.database.database.pool.query(
    'select seq, idx, compacted_by from part_prunes where session_pk = $1 order by seq, idx',
    [await sessionPk(api, session)],
  );
  return rows as Array<{ seq: number; idx: number; compacted_by: string }>;
};

describe('POST /v1/compactions/:id/revert', () => {
  it('restores exactly the context and the status served before the compaction', async () => {
    await newSession(api, 'rv-1', PRUNING_POLICY);
    await appendCoding('rv-1', 4);
    const before = await served('rv-1');

    const id = await compacted('rv-1');
    const after = await served('rv-1');
    expect(after.ids).not.toEqual(before.ids);
    expect(after.tokens).toBeLessThan(before.tokens);
    // The prune step marked outputs: the revert must take those marks back too.
    expect((await pruneMarks('rv-1')).filter((m) => m.compacted_by === id).length).toBeGreaterThan(0);

    const response = await revert(id);
    expect(response.statusCode, response.body).toBe(200);
    const answer = response.json();
    expect(answer.compaction).toMatchObject({ id, status: 'reverted', revertedAt: expect.any(String) });
    expect(answer.status.tokens).toBe(before.tokens);
    expect(answer.status.lastCompaction).toMatchObject({ id, status: 'reverted' });

    const restored = await served('rv-1');
    expect(restored.ids).toEqual(before.ids);
    expect(restored.native).toEqual(before.native);
    expect(restored.openai).toEqual(before.openai);
    expect(restored.tokens).toBe(before.tokens);
    expect(restored.contextMessages).toBe(before.contextMessages);
    expect(restored.estimate).toBe(before.estimate);
    expect(await pruneMarks('rv-1')).toEqual([]);

    // The summary stays in the raw history, the row keeps what it did, and the event says so.
    const history = (await get('/v1/sessions/rv-1/messages?limit=200')).json();
    const summaryIds = answer.compaction.summaryMessageIds as string[];
    expect(summaryIds.length).toBeGreaterThan(0);
    expect(history.messages.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining(summaryIds));
    expect((await get(`/v1/compactions/${id}`)).json()).toMatchObject({
      status: 'reverted',
      tokensAfter: after.tokens,
    });
    expect(reverted.filter((r) => r.compactionId === id)).toEqual([
      {
        sessionId: 'rv-1',
        compactionId: id,
        data: { restoredCompactionId: null, tokens: before.tokens, contextMessages: before.contextMessages },
      },
    ]);
    const { rows } = await api.database.database.pool.query(
      'select status from analytics.compactions where compaction_id = $1',
      [id],
    );
    expect(rows).toEqual([{ status: 'reverted' }]);
  });

  it('keeps messages appended after the compaction and prune jobs’ marks; only the latest can be reverted, then the one before it', async () => {
    await newSession(api, 'rv-2', PRUNING_POLICY);
    await appendCoding('rv-2', 3, 11);
    const beforeFirst = await served('rv-2');
    const first = await compacted('rv-2');
    const later = await appendCoding('rv-2', 3, 12);
    const beforeSecond = await served('rv-2');
    const second = await compacted('rv-2');

    // The earlier one is not the latest: 409, nothing written.
    const early = await revert(first);
    expect(early.statusCode).toBe(409);
    expect(early.json().error).toMatchObject({
      code: 'conflict',
      details: { reason: 'not_latest', compactionId: first, latestCompactionId: second },
    });

    // A prune job's mark made after the compaction, on an output the view kept, is not undone.
    const pk = await sessionPk(api, 'rv-2');
    const { rows: kept } = await api.database.database.pool.query(
      `select p.seq, p.idx from parts p
       where p.session_pk = $1 and p.type = 'tool' and p.tool_status = 'completed'
         and not exists (select 1 from part_prunes pp where pp.session_pk = p.session_pk and pp.seq = p.seq and pp.idx = p.idx)
       order by p.seq desc limit 1`,
      [pk],
    );
    await api.database.database.pool.query(
      `insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by) values ($1, $2, $3, now(), 'prn_job')`,
      [pk, kept[0].seq, kept[0].idx],
    );

    expect((await revert(second)).statusCode).toBe(200);
    const restored = await served('rv-2');
    // Every message of the view before the second compaction, the later turns included.
    expect(restored.ids).toEqual(beforeSecond.ids);
    expect(await pruneMarks('rv-2')).toContainEqual({
      seq: kept[0].seq,
      idx: kept[0].idx,
      compacted_by: 'prn_job',
    });
    expect((await pruneMarks('rv-2')).filter((m) => m.compacted_by === second)).toEqual([]);

    // Reverted already: 409, not found again.
    const again = await revert(second);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.details).toMatchObject({ reason: 'not_completed', status: 'reverted' });

    // The one before it is the latest completed, non-reverted one now.
    await api.database.database.pool.query(`delete from part_prunes where compacted_by = 'prn_job'`);
    const response = await revert(first);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().status.lastCompaction).toMatchObject({ id: second, status: 'reverted' });
    const whole = await served('rv-2');
    // The whole history: the view before the first compaction, then what came after it.
    expect(whole.ids).toEqual([...beforeFirst.ids, ...later]);
    expect(reverted.find((r) => r.compactionId === second)?.data.restoredCompactionId).toBe(first);
  });

  it('does not calibrate the estimate on a usage report measured on the reverted view', async () => {
    await newSession(api, 'rv-6');
    await appendCoding('rv-6', 3);
    const before = await served('rv-6');
    expect(before.estimate).toBe('hybrid');
    const id = await compacted('rv-6');
    // A turn on the compacted view: its report counts the small view the revert undoes.
    const usage = { input: 900, output: 40, reasoning: 0, cacheRead: 0, cacheWrite: 0 };
    const turn = await api.request({
      method: 'POST',
      url: '/v1/sessions/rv-6/messages',
      payload: {
        messages: [
          { id: 'rv-6-q', role: 'user', parts: [{ type: 'text', text: 'and the tests?' }] },
          {
            id: 'rv-6-a',
            role: 'assistant',
            finish: 'stop',
            usage,
            parts: [{ type: 'text', text: 'They pass.' }],
          },
        ],
      },
    });
    expect(turn.statusCode, turn.body).toBe(201);
    expect((await revert(id)).statusCode).toBe(200);

    // The report before the compaction calibrates it again, plus the stored counts of the turn.
    const { rows } = await api.database.database.pool.query(
      `select sum(p.tokens)::int as tokens from parts p join messages m on m.pk = p.message_pk
       where m.session_pk = $1 and m.id in ('rv-6-q', 'rv-6-a')`,
      [await sessionPk(api, 'rv-6')],
    );
    const restored = await served('rv-6');
    expect(restored.ids).toEqual([...before.ids, 'rv-6-q', 'rv-6-a']);
    expect(restored.estimate).toBe('hybrid');
    expect(restored.tokens).toBe(before.tokens + rows[0].tokens);
  });

  it('answers 409 while another compaction of the session is pending or running, 404 for another tenant', async () => {
    await newSession(api, 'rv-3');
    await appendCoding('rv-3', 3);
    const id = await compacted('rv-3');
    await appendCoding('rv-3', 2, 9);
    const pending = await api.request({ method: 'POST', url: '/v1/sessions/rv-3/compactions', payload: {} });
    expect(pending.statusCode).toBe(202);

    const busy = await revert(id);
    expect(busy.statusCode).toBe(409);
    expect(busy.json().error.details).toMatchObject({
      reason: 'compaction_active',
      activeCompactionId: pending.json().id,
    });
    const notDone = await revert(pending.json().id);
    expect(notDone.json().error.details).toMatchObject({ reason: 'not_completed', status: 'pending' });

    const other = await revert(id, TENANT_B_KEY);
    expect(other.statusCode).toBe(404);
    expect(other.json().error.code).toBe('not_found');
    expect((await revert('cmp_missing')).statusCode).toBe(404);
    expect((await revert('bad\u0000id')).statusCode).toBe(400);
    expect((await get(`/v1/compactions/${id}`)).json().status).toBe('completed');
  });

  it('refuses a revert whose restored view would show content the retention purge cleared', async () => {
    await newSession(api, 'rv-4');
    await appendCoding('rv-4', 3);
    const id = await compacted('rv-4');
    const pk = await sessionPk(api, 'rv-4');
    await api.database.database.pool.query(
      `update messages set purged_at = now() where session_pk = $1 and seq = 1`,
      [pk],
    );
    const refused = await revert(id);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.details).toMatchObject({ reason: 'history_purged' });
    expect((await get(`/v1/compactions/${id}`)).json().status).toBe('completed');
  });

  it('holds the auto trigger after a revert until the session grows, as after a failed compaction', async () => {
    // A 2,000-token trigger on a 128k window: the coding session is over it (an auto compaction
    // at the append) and far from the usable window.
    await newSession(api, 'rv-5', { policy: { trigger: { kind: 'tokens', tokens: 2_000 } } });
    await appendCoding('rv-5', 3);
    const [auto] = await compactionsOf(api, 'rv-5');
    expect(auto).toMatchObject({ reason: 'auto', status: 'pending' });
    await runAsWorker(auto!.id);
    expect((await revert(auto!.id)).statusCode).toBe(200);
    const status = (await get('/v1/sessions/rv-5')).json().status;
    expect(status.tokens).toBeGreaterThan(status.triggerTokens);
    expect(status.overflow).toBe(false);

    // A small append: still over the trigger, yet no compaction undoes the revert.
    const small = await api.request({
      method: 'POST',
      url: '/v1/sessions/rv-5/messages',
      payload: { messages: [{ id: 'rv-5-small', role: 'user', parts: [{ type: 'text', text: 'go on' }] }] },
    });
    expect(small.statusCode, small.body).toBe(201);
    expect(small.json().compaction ?? null).toBeNull();
    expect((await compactionsOf(api, 'rv-5')).map((c) => c.status)).toEqual(['reverted']);
  });
});
