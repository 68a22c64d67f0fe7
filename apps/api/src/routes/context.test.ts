import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assembleContext, toOpenAIMessages, validateContext } from '@compactor/core';
import {
  boundaryFromRow,
  completeCompaction,
  findSession,
  insertCompaction,
  listCompactions,
  loadHistoryPage,
  markPartsCompacted,
  updateCompaction,
} from '@compactor/db';
import { useTestApi } from '../test-support/api';

const api = useTestApi();

async function session(id: string) {
  await api.request({ method: 'POST', url: '/v1/sessions', payload: { id, model: { id: 'gpt-4o' } } });
  const row = await findSession(api.database.db, 'tenant-a', id);
  if (!row) throw new Error('no session');
  return row;
}
const post = (id: string, messages: unknown[]) =>
  api.request({ method: 'POST', url: `/v1/sessions/${id}/messages`, payload: { messages } });
const context = async (id: string, format = 'native') =>
  (await api.request({ method: 'GET', url: `/v1/sessions/${id}/context?format=${format}` })).json();

const tool = (callId: string, output: string | null, status = output === null ? 'running' : 'completed') => ({
  type: 'tool',
  callId,
  tool: 'read',
  status,
  input: { path: `${callId}.ts` },
  ...(output === null ? {} : { output }),
});

async function finishCompaction(sessionPk: number, boundarySeq: number, summary: string) {
  const row = await insertCompaction(api.database.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk,
    reason: 'manual',
    strategy: 'summarize',
    status: 'running',
  });
  const now = new Date();
  return completeCompaction(api.database.db, {
    compactionId: row!.id,
    sessionPk,
    boundarySeq,
    summaryMessages: [
      {
        id: `req_${row!.id}`,
        role: 'user',
        parts: [{ type: 'compaction', auto: false, tokens: 5 }],
        finish: null,
        error: null,
        usage: null,
        createdAt: now,
        metadata: {},
        contentHash: 'x',
      },
      {
        id: `sum_${row!.id}`,
        role: 'assistant',
        parts: [{ type: 'text', text: summary, tokens: 20 }],
        finish: 'stop',
        error: null,
        usage: null,
        createdAt: now,
        metadata: {},
        contentHash: 'x',
      },
    ],
    tokensBefore: 0,
    messagesBefore: 0,
    finishedAt: now,
  });
}

describe('GET /v1/sessions/:id/context', () => {
  it('with no compaction: the whole history, pruned outputs as their marker, unfinished calls interrupted', async () => {
    const row = await session('c-plain');
    await post('c-plain', [
      { role: 'user', parts: [{ type: 'text', text: 'look at a and b' }] },
      { role: 'assistant', parts: [tool('ca', 'contents of a'), tool('cb', null)], finish: 'tool-calls' },
    ]);
    await markPartsCompacted(api.database.db, row.pk, [{ seq: 2, callId: 'ca' }], {
      at: new Date(),
      by: 'test',
    });

    const native = await context('c-plain');
    expect(native.compactionId).toBeNull();
    expect(native.boundarySeq).toBeNull();
    const [, assistant] = native.messages;
    // The marker names the call to recall; it counts (43 + 2 bytes of "ca" + 3) / 4 = 12 tokens.
    expect(assistant.parts[0]).toMatchObject({
      output: '[Old tool result content cleared — recall ca]',
      outputTokens: 12,
    });
    expect(assistant.parts[1]).toMatchObject({ status: 'error', error: '[Tool execution was interrupted]' });

    const openai = await context('c-plain', 'openai');
    expect(validateContext(openai.messages)).toEqual([]);
    expect(openai.messages).toEqual([
      { role: 'user', content: 'look at a and b' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'ca', type: 'function', function: { name: 'read', arguments: '{"path":"ca.ts"}' } },
          { id: 'cb', type: 'function', function: { name: 'read', arguments: '{"path":"cb.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'ca', content: '[Old tool result content cleared — recall ca]' },
      { role: 'tool', tool_call_id: 'cb', content: '[Tool execution was interrupted]' },
    ]);
    // The raw history still has the output.
    const raw = await loadHistoryPage(api.database.db, row.pk, { afterSeq: 0, limit: 10 });
    expect(raw.messages[1]?.parts[0]).toMatchObject({ output: 'contents of a' });
  });

  it('after a completed compaction: summary first, then the kept messages and later appends', async () => {
    const row = await session('c-compacted');
    await post(
      'c-compacted',
      ['u1', 'a1', 'u2', 'a2'].map((t) => ({
        role: t[0] === 'u' ? 'user' : 'assistant',
        parts: [{ type: 'text', text: t }],
      })),
    );
    const pending = await insertCompaction(api.database.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk: row.pk,
      reason: 'auto',
      strategy: 'summarize',
    });
    expect((await context('c-compacted')).messages).toHaveLength(4); // a pending compaction changes nothing
    await updateCompaction(api.database.db, pending!.id, { status: 'failed', finishedAt: new Date() });
    expect((await context('c-compacted')).messages).toHaveLength(4); // nor does a failed one

    const done = await finishCompaction(row.pk, 3, 'We greeted each other.');
    await post('c-compacted', [{ role: 'user', parts: [{ type: 'text', text: 'u3' }] }]);

    const native = await context('c-compacted');
    expect(native.compactionId).toBe(done.id);
    expect(native.boundarySeq).toBe(3);
    expect(
      native.messages.map(
        (m: { parts: { text?: string; type: string }[] }) => m.parts[0]?.text ?? m.parts[0]?.type,
      ),
    ).toEqual(['compaction', 'We greeted each other.', 'u2', 'a2', 'u3']);
    const openai = await context('c-compacted', 'openai');
    expect(validateContext(openai.messages)).toEqual([]);
    expect(openai.messages[1]).toEqual({ role: 'assistant', content: 'We greeted each other.' });
  });

  it('matches the core reference (assembled from the whole history) on random sessions', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            role: fc.constantFrom('user', 'assistant'),
            tools: fc.array(fc.constantFrom('completed', 'running', 'error'), { maxLength: 3 }),
            prune: fc.boolean(),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.array(
          fc.record({ boundary: fc.nat(14), status: fc.constantFrom('completed', 'failed', 'skipped') }),
          {
            maxLength: 3,
          },
        ),
        async (shape, compactions) => {
          const id = `c-prop-${n++}`;
          const row = await session(id);
          await post(
            id,
            shape.map((m, i) => ({
              role: m.role,
              parts: [
                { type: 'text', text: `message ${i}` },
                ...(m.role === 'assistant'
                  ? m.tools.map((status, j) =>
                      status === 'error'
                        ? { ...tool(`c${i}_${j}`, null, 'error'), error: 'boom' }
                        : tool(`c${i}_${j}`, status === 'completed' ? `out ${i} ${j}` : null, status),
                    )
                  : []),
              ],
            })),
          );
          const prunable = shape.flatMap((m, i) =>
            m.role === 'assistant' && m.prune
              ? m.tools.flatMap((s, j) => (s === 'completed' ? [{ seq: i + 1, callId: `c${i}_${j}` }] : []))
              : [],
          );
          await markPartsCompacted(api.database.db, row.pk, prunable, { at: new Date(), by: 'prop' });
          for (const c of compactions) {
            if (c.status === 'completed')
              await finishCompaction(row.pk, c.boundary, `summary to ${c.boundary}`);
            else
              await insertCompaction(api.database.db, {
                id: `cmp_${randomUUID()}`,
                sessionPk: row.pk,
                reason: 'auto',
                strategy: 'summarize',
                status: c.status,
                boundarySeq: c.boundary,
                finishedAt: new Date(),
              });
          }

          const all = await loadHistoryPage(api.database.db, row.pk, { afterSeq: 0, limit: 1000 });
          const rows = await listCompactions(api.database.db, row.pk, { limit: 100 });
          const reference = assembleContext(all.messages, rows.map(boundaryFromRow));
          const served = await context(id);
          const { fit, usable, activeCompaction, ...view } = served;
          expect(view).toEqual(JSON.parse(JSON.stringify(reference)));
          // A 128k window: every one of these views fits as it is.
          expect({ fit, activeCompaction }).toEqual({ fit: 'view', activeCompaction: null });
          expect(usable).toBeGreaterThan(served.tokens);
          const openai = await context(id, 'openai');
          expect(openai.messages).toEqual(JSON.parse(JSON.stringify(toOpenAIMessages(reference))));
          expect(validateContext(openai.messages)).toEqual([]);
        },
      ),
      { numRuns: 25 },
    );
  });
});
