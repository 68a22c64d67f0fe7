import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  applyRetentionPurge,
  completeCompaction,
  findSession,
  insertCompaction,
  loadHistoryPage,
  markPartsCompacted,
  markPrunedRecallable,
  markRecallableBehind,
} from '@compactor/db';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';

const api = useTestApi();

async function session(id: string, key?: string) {
  const response = await api.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: 'gpt-4o' } },
    ...(key ? { key } : {}),
  });
  expect(response.statusCode).toBe(201);
  const row = await findSession(api.database.db, key ? 'tenant-b' : 'tenant-a', id);
  if (!row) throw new Error('no session');
  return row;
}

async function post(id: string, messages: unknown[], key?: string) {
  const response = await api.request({
    method: 'POST',
    url: `/v1/sessions/${id}/messages`,
    payload: { messages },
    ...(key ? { key } : {}),
  });
  expect(response.statusCode).toBeLessThan(300);
}

const recall = (id: string, query: string, key?: string) =>
  api.request({ method: 'GET', url: `/v1/sessions/${id}/recall?${query}`, ...(key ? { key } : {}) });

const text = (value: string) => ({ type: 'text', text: value });
const tool = (callId: string, output: string | null) => ({
  type: 'tool',
  callId,
  tool: 'bash',
  status: output === null ? 'running' : 'completed',
  input: { command: 'npm test' },
  ...(output === null ? {} : { output }),
});

/**
 * A completed compaction whose boundary is `boundarySeq`, with a summary saying `summary`; what
 * it puts behind the boundary is flagged for recall first, as the workflow's finalize does.
 */
async function compact(sessionPk: number, boundarySeq: number, summary: string) {
  await markRecallableBehind(api.database.db, sessionPk, boundarySeq);
  const row = await insertCompaction(api.database.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk,
    reason: 'manual',
    strategy: 'summarize',
    status: 'running',
  });
  const now = new Date();
  await completeCompaction(api.database.db, {
    compactionId: row!.id,
    sessionPk,
    boundarySeq,
    summaryMessages: [
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

// The long output whose match lies in its middle: the excerpt is cut around it.
const LONG_OUTPUT = `${'alpha '.repeat(400)}the needle is here${' omega'.repeat(400)}`;
const ODD_CALL = 'appel_é😀';

/**
 * Tenant A's `quokka` session: a pinned system message, two summarized turns (seq 2–3), then
 * the kept messages from seq 4 on, one of whose outputs (call_2) is cleared; tenant B has a
 * session with the same id and its own call_1.
 */
beforeAll(async () => {
  const row = await session('quokka');
  await post('quokka', [
    { role: 'system', parts: [text('You are the quokka assistant.')] },
    { role: 'user', parts: [text('the quokka parser fails, quokka quokka quokka')] },
    {
      role: 'assistant',
      parts: [
        tool('call_1', 'FAIL test/quokka.test.ts > nested quotes in unquote()'),
        tool('call_long', LONG_OUTPUT),
      ],
      finish: 'tool-calls',
    },
    { role: 'user', parts: [text('now the zebra module')] },
    {
      role: 'assistant',
      parts: [
        tool('call_2', 'zebra: 42 lines changed'),
        tool(ODD_CALL, 'wombat output'),
        tool('call_run', null),
      ],
      finish: 'tool-calls',
    },
    { role: 'user', parts: [text('one more quokka question, still in view')] },
  ]);
  await compact(row.pk, 4, 'Summary: the quokka parser was fixed.');
  const { markedSeqs } = await markPartsCompacted(
    api.database.db,
    row.pk,
    [
      { seq: 5, callId: 'call_2' },
      { seq: 5, callId: ODD_CALL },
    ],
    { at: new Date('2026-01-05T10:12:00.000Z'), by: 'prune_test' },
  );
  // As a prune job does after its marks: the cleared outputs become searchable.
  await markPrunedRecallable(api.database.db, row.pk, 'prune_test', markedSeqs!);
  await session('quokka', TENANT_B_KEY);
  await post(
    'quokka',
    [{ role: 'assistant', parts: [tool('call_1', 'tenant b secret output')] }],
    TENANT_B_KEY,
  );
});

describe('GET /v1/sessions/:id/recall?callId=', () => {
  it('returns a cleared output the context marker names, as stored', async () => {
    const context = (await api.request({ method: 'GET', url: '/v1/sessions/quokka/context' })).json();
    const outputs: string[] = context.messages.flatMap((m: { parts: Array<{ output?: string | null }> }) =>
      m.parts.flatMap((p) => (typeof p.output === 'string' ? [p.output] : [])),
    );
    const markers = outputs.flatMap((o) => [
      ...o.matchAll(/^\[Old tool result content cleared — recall (.+)\]$/gu),
    ]);
    expect(markers.map((m) => m[1])).toEqual(['call_2', ODD_CALL]);

    const raw = await loadHistoryPage(
      api.database.db,
      (await findSession(api.database.db, 'tenant-a', 'quokka'))!.pk,
      {
        afterSeq: 0,
        limit: 10,
      },
    );
    const stored = raw.messages[4]!.parts[0]!;
    for (const [callId, output] of [
      ['call_2', 'zebra: 42 lines changed'],
      [ODD_CALL, 'wombat output'],
    ]) {
      const response = await recall('quokka', `callId=${encodeURIComponent(callId!)}`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({
        kind: 'call',
        callId,
        tool: 'bash',
        status: 'completed',
        output,
        error: null,
        messageId: raw.messages[4]!.id,
        seq: 5,
        prunedAt: '2026-01-05T10:12:00.000Z',
      });
    }
    const call2 = (await recall('quokka', 'callId=call_2')).json();
    expect(stored).toMatchObject({ callId: 'call_2' });
    expect(call2.tokens).toBe((stored as { outputTokens: number }).outputTokens);
  });

  it('returns a summarized call that was never cleared, with prunedAt null', async () => {
    const response = await recall('quokka', 'callId=call_1');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      kind: 'call',
      callId: 'call_1',
      output: 'FAIL test/quokka.test.ts > nested quotes in unquote()',
      seq: 3,
      prunedAt: null,
    });
  });

  it('is a 404 for an unknown call, an unfinished call and a missing session', async () => {
    for (const [id, query] of [
      ['quokka', 'callId=call_9'],
      ['quokka', 'callId=call_run'],
      ['no-such-session', 'callId=call_1'],
    ]) {
      const response = await recall(id!, query!);
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('not_found');
    }
  });

  it("never finds another tenant's call: each tenant reads its own session of that id", async () => {
    const b = (await recall('quokka', 'callId=call_1', TENANT_B_KEY)).json();
    expect(b).toMatchObject({ kind: 'call', output: 'tenant b secret output', seq: 1, prunedAt: null });
    const missing = await recall('quokka', 'callId=call_2', TENANT_B_KEY);
    expect(missing.statusCode).toBe(404);
    const a = (await recall('quokka', 'callId=call_1')).json();
    expect(a.output).not.toContain('tenant b');
  });
});

describe('GET /v1/sessions/:id/recall?q=', () => {
  it('finds summarized messages and cleared outputs, never the view, the summary or pinned messages', async () => {
    const response = await recall('quokka', 'q=quokka');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.kind).toBe('search');
    expect(body.query).toBe('quokka');
    // Four quokkas in seq 2's text outrank one in seq 3's output; seq 1 (pinned), the summary
    // and seq 6 (in the view) hold the word too and are not searched.
    expect(
      body.results.map((r: { seq: number; source: string; callId: string | null }) => [
        r.seq,
        r.source,
        r.callId,
      ]),
    ).toEqual([
      [2, 'summarized', null],
      [3, 'summarized', 'call_1'],
    ]);
    expect(body.results[0]).toMatchObject({
      role: 'user',
      tool: null,
      excerpt: 'the quokka parser fails, quokka quokka quokka',
    });
    expect(body.results[1]).toMatchObject({ role: 'assistant', tool: 'bash' });
    expect(body.results[0].rank).toBeGreaterThan(body.results[1].rank);
  });

  it('finds a cleared output after the boundary, and not the kept message beside it', async () => {
    const body = (await recall('quokka', 'q=zebra')).json();
    expect(body.results).toEqual([
      expect.objectContaining({
        seq: 5,
        source: 'cleared',
        callId: 'call_2',
        excerpt: 'zebra: 42 lines changed',
      }),
    ]);
  });

  it('takes websearch syntax, honours the limit and cuts excerpts around the match', async () => {
    expect((await recall('quokka', 'q=quokka&limit=1')).json().results).toHaveLength(1);
    expect(
      (await recall('quokka', `q=${encodeURIComponent('"nested quotes" -zebra')}`)).json().results,
    ).toEqual([expect.objectContaining({ seq: 3, callId: 'call_1' })]);
    expect((await recall('quokka', 'q=quokka%20or%20zebra')).json().results).toHaveLength(3);
    const [hit] = (await recall('quokka', 'q=needle')).json().results;
    const at = LONG_OUTPUT.indexOf('needle');
    // 300 characters before the first matching word, 1,000 in all.
    expect(hit.excerpt).toBe(LONG_OUTPUT.slice(at - 300, at - 300 + 1000));
    expect(hit.callId).toBe('call_long');
  });

  it('finds nothing for words nowhere, negations alone or punctuation', async () => {
    for (const q of ['platypus', '-quokka', '!!!']) {
      const response = await recall('quokka', `q=${encodeURIComponent(q)}`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ kind: 'search', query: q, results: [] });
    }
  });

  it("never searches another tenant's session: each tenant searches its own", async () => {
    expect((await recall('quokka', 'q=quokka', TENANT_B_KEY)).json().results).toEqual([]);
    // Tenant B's own session is searched only once its history leaves the view.
    expect((await recall('quokka', 'q=secret', TENANT_B_KEY)).json().results).toEqual([]);
    expect((await recall('quokka', 'q=secret')).json().results).toEqual([]);
  });
});

describe('GET /v1/sessions/:id/recall: bad queries', () => {
  it.each([
    ['neither callId nor q', ''],
    ['both callId and q', 'callId=call_1&q=quokka'],
    ['limit with callId', 'callId=call_1&limit=2'],
    ['limit 0', 'q=quokka&limit=0'],
    ['limit 21', 'q=quokka&limit=21'],
    ['limit not a number', 'q=quokka&limit=abc'],
    ['limit beyond int4', 'q=quokka&limit=4294967297'],
    ['empty q', 'q='],
    ['q of 501 characters', `q=${'a'.repeat(501)}`],
    ['q with a NUL', 'q=a%00b'],
    ['q twice', 'q=a&q=b'],
    ['callId of 201 characters', `callId=${'c'.repeat(201)}`],
    ['an unknown parameter', 'q=quokka&page=2'],
  ])('%s is a 400', async (_name, query) => {
    const response = await recall('quokka', query);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
  });

  it('needs a key', async () => {
    expect(
      (await api.request({ method: 'GET', url: '/v1/sessions/quokka/recall?q=a', key: null })).statusCode,
    ).toBe(401);
  });
});

describe('GET /v1/sessions/:id/recall after the retention purge', () => {
  it('answers 410 gone for purged outputs, and purged text is no longer found', async () => {
    await applyRetentionPurge(api.database.db, {
      tenantId: 'tenant-a',
      createdBefore: new Date(Date.now() + 60_000),
    });
    for (const callId of ['call_1', 'call_2', ODD_CALL]) {
      const response = await recall('quokka', `callId=${encodeURIComponent(callId)}`);
      expect(response.statusCode).toBe(410);
      expect(response.json().error.code).toBe('gone');
    }
    for (const q of ['quokka', 'zebra', 'needle']) {
      expect((await recall('quokka', `q=${q}`)).json().results).toEqual([]);
    }
    // Tenant B's history is not tenant A's retention's business.
    expect((await recall('quokka', 'callId=call_1', TENANT_B_KEY)).statusCode).toBe(200);
  });
});
