/**
 * Sub-agents and background tasks across compactions: 11 tasks started over 3 compactions whose
 * summarizer drops everything; after each, every running task is named exactly once in the served
 * context; results PATCHed after their call was compacted are delivered and named; the block is
 * bounded at 500 tasks; duplicates are flagged; another tenant cannot read them.
 */
import { describe, expect, it } from 'vitest';
import { verifyTasksInContext } from '@compactor/core';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';
import { newSession, sessionPk } from '../test-support/helpers';
import { useInProcessWorker } from '../test-support/in-process-worker';

const events: Array<{ type: string; callId: string }> = [];
const api = useTestApi({
  jobs: (jobs) => ({
    ...jobs,
    tasksChanged: async (_session, changes) => void events.push(...changes),
  }),
});
const worker = useInProcessWorker(api);

const get = (url: string, key?: string) => api.request({ method: 'GET', url, ...(key ? { key } : {}) });
const prompt = (n: number) => `Port module ${n} of the parser to the new token API and run its tests`;
const filler = (n: number) => `Reviewed the lexer output for step ${n}. `.repeat(120);

/** Appends a turn that starts `ids` as running Task calls (the first two with one input when `duplicate`). */
async function startTasks(session: string, round: number, ids: string[], duplicate = false) {
  const parts = ids.map((callId, i) => ({
    type: 'tool',
    callId,
    tool: 'Task',
    status: 'running',
    input: {
      description: `module ${round}.${duplicate && i === 1 ? 0 : i}`,
      prompt: prompt(duplicate && i === 1 ? 0 : i),
    },
  }));
  const response = await api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: {
      messages: [
        {
          id: `u${round}`,
          role: 'user',
          parts: [{ type: 'text', text: `Round ${round}: dispatch the ports.` }],
        },
        { id: `a${round}`, role: 'assistant', finish: 'tool-calls', parts },
        {
          id: `f${round}`,
          role: 'assistant',
          finish: 'stop',
          parts: [{ type: 'text', text: filler(round) }],
        },
        { id: `n${round}`, role: 'user', parts: [{ type: 'text', text: `Next round after ${round}.` }] },
      ],
    },
  });
  expect(response.statusCode, response.body).toBe(201);
}

async function compact(session: string) {
  const requested = await api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/compactions`,
    payload: { keepRecentTokens: 20 },
  });
  expect(requested.statusCode, requested.body).toBe(202);
  await worker.run(requested.json().id);
}

const finish = (session: string, round: number, callId: string, output: string) =>
  api.request({
    method: 'PATCH',
    url: `/v1/sessions/${session}/messages/a${round}`,
    payload: { parts: [{ type: 'tool', callId, tool: 'Task', status: 'completed', output }] },
  });

type Served = {
  messages: Array<{ id: string; parts: Array<{ type: string; text?: string }> }>;
  tokens: number;
  usable: number;
};

describe('tasks across compactions', () => {
  it('keeps every running task in the served context, once, and delivers late results named', async () => {
    const session = 'tasks-1';
    await newSession(api, session, { policy: { auto: false } });
    worker.stub.setFaults({ output: 'drop-everything' });
    const rounds = [
      ['t1', 't2', 't3', 't4'],
      ['t5', 't6', 't7', 't8'],
      ['t9', 't10', 't11'],
    ];
    const running = new Set<string>();
    const done = new Set<string>();
    for (const [r, ids] of rounds.entries()) {
      await startTasks(session, r, ids, r === 2);
      ids.forEach((id) => running.add(id));
      await compact(session);
      if (r === 1) {
        // Results of round 0's tasks, whose call the first compaction covered.
        for (const callId of ['t1', 't3']) {
          const patched = await finish(session, 0, callId, `ported ${callId}: 14 tests pass`);
          expect(patched.statusCode, patched.body).toBe(200);
          expect(patched.json().taskResults).toEqual([
            { callId, messageId: `task-result-${callId}`, seq: expect.any(Number) },
          ]);
          running.delete(callId);
          done.add(callId);
        }
        // A retry delivers nothing twice.
        expect((await finish(session, 0, 't1', 'ported t1: 14 tests pass')).statusCode).toBe(200);
        // A different result for a finished task is still refused.
        expect((await finish(session, 0, 't1', 'other')).statusCode).toBe(409);
      }
      const context = (await get(`/v1/sessions/${session}/context`)).json() as Served;
      expect(verifyTasksInContext(context.messages as never, [...running])).toEqual({
        missing: [],
        repeated: [],
      });
      expect(context.tokens).toBeLessThanOrEqual(context.usable);
      const texts = context.messages.flatMap((m) => m.parts.map((p) => p.text ?? ''));
      // Delivered right after the compaction that covered the call; a later compaction summarises
      // the notification like any message, and the block keeps the outcome.
      for (const callId of r === 1 ? done : []) {
        const notes = texts.filter(
          (t) => t.startsWith('<task-notification>') && t.includes(`[task ${callId}]`),
        );
        expect(notes, callId).toHaveLength(1);
        expect(notes[0]).toContain(
          `It was asked: description: module 0.${callId === 't1' ? 0 : 2} · prompt:`,
        );
      }
    }
    const block = ((await get(`/v1/sessions/${session}/context`)).json() as Served).messages
      .flatMap((m) => m.parts.map((p) => p.text ?? ''))
      .find((t) => t.startsWith('<tasks>'));
    expect(block).toContain('[task t10] Task, running');
    // t9 and t10 were dispatched with one input: one of them is flagged, once.
    expect(block!.match(/\(DUPLICATE of t(9|10): same tool and input\)/g)).toHaveLength(1);
    expect(block).toMatch(
      /\[task t1\] Task completed \S+: description: module 0\.0 .* → ported t1: 14 tests pass/,
    );

    expect((await get(`/v1/sessions/${session}`)).json().tasks).toEqual({ running: 9, duplicates: 1 });
    const listed = (await get(`/v1/sessions/${session}/tasks?limit=5`)).json();
    expect(listed.tasks).toHaveLength(5);
    const rest = (await get(`/v1/sessions/${session}/tasks?cursor=${listed.nextCursor}`)).json();
    expect([...listed.tasks, ...rest.tasks].map((t: { callId: string }) => t.callId).sort()).toEqual(
      rounds.flat().sort(),
    );
    expect(rest.tasks.find((t: { callId: string }) => t.callId === 't1')).toMatchObject({
      status: 'completed',
      outcome: 'ported t1: 14 tests pass',
      deliveredSeq: expect.any(Number),
    });
    expect(events.filter((e) => e.type === 'task.started')).toHaveLength(11);
    expect(events.filter((e) => e.type === 'task.finished').map((e) => e.callId)).toEqual(['t1', 't3']);

    // Tenancy: another tenant's key sees no such session.
    expect((await get(`/v1/sessions/${session}/tasks`, TENANT_B_KEY)).statusCode).toBe(404);
    expect((await get(`/v1/sessions/${session}/tasks?cursor=nonsense`)).statusCode).toBe(400);

    // Bounded: 600 more running tasks, the block lists 500 and counts the rest.
    const pk = await sessionPk(api, session);
    await api.database.database.pool.query(
      `insert into session_tasks (session_pk, tenant_id, call_id, message_id, seq, tool, status, asked, dedupe_key, started_at)
       select $1, 'tenant-a', 'bulk_' || g, 'a0', 1, 'Task', 'running', 'prompt: bulk', 'bulk' || g, now() + g * interval '1 second'
       from generate_series(1, 600) g`,
      [pk],
    );
    const big = (await get(`/v1/sessions/${session}/context`)).json() as Served;
    const bigBlock = big.messages
      .flatMap((m) => m.parts.map((p) => p.text ?? ''))
      .find((t) => t.startsWith('<tasks>'))!;
    expect(bigBlock.match(/^- \[task /gm)!.length).toBeLessThanOrEqual(500);
    expect(bigBlock).toMatch(/\((\d+) more running tasks not listed/);
    expect(big.tokens).toBeLessThanOrEqual(big.usable);
  });
});
