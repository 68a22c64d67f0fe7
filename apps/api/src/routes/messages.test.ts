import { beforeAll, describe, expect, it } from 'vitest';
import { getTokenizer } from '@compactor/tokenizer';
import { useTestApi } from '../test-support/api';

const api = useTestApi();
const count = (text: string) => getTokenizer('o200k_base').countSync(text);

async function newSession(id: string, model: Record<string, unknown> = { id: 'gpt-4o' }) {
  const response = await api.request({ method: 'POST', url: '/v1/sessions', payload: { id, model } });
  expect(response.statusCode).toBe(201);
}

const post = (session: string, messages: unknown[]) =>
  api.request({ method: 'POST', url: `/v1/sessions/${session}/messages`, payload: { messages } });

async function history(session: string) {
  return (await api.request({ method: 'GET', url: `/v1/sessions/${session}/messages?limit=1000` })).json()
    .messages;
}

const readCall = (callId: string, output: string) => ({
  type: 'tool',
  callId,
  tool: 'read',
  status: 'completed',
  input: { path: `${callId}.ts` },
  output,
});

describe('POST /v1/sessions/:id/messages', () => {
  beforeAll(() => newSession('m-bad'));

  it('appends a batch in order with exact token counts and returns seqs and status', async () => {
    await newSession('m-append');
    const response = await post('m-append', [
      { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Please read the config loader.' }] },
      {
        id: 'a1',
        role: 'assistant',
        parts: [{ type: 'text', text: 'Reading it.' }, readCall('call_1', 'export function load() {}')],
        finish: 'tool-calls',
      },
    ]);
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body.messages).toEqual([
      { id: 'u1', seq: 1, created: true },
      { id: 'a1', seq: 2, created: true },
    ]);
    expect(body.compaction).toBeNull();

    const [user, assistant] = await history('m-append');
    expect(user.parts[0].tokens).toBe(count('Please read the config loader.'));
    const tool = assistant.parts[1];
    expect(tool.outputTokens).toBe(count('export function load() {}'));
    expect(tool.tokens).toBe(
      count('read') + count('{"path":"call_1.ts"}') + count('export function load() {}'),
    );
    expect(body.status.tokens).toBe(user.parts[0].tokens + assistant.parts[0].tokens + tool.tokens);
    expect(body.status.estimate).toBe('stored');
  });

  it('calibrates status on the last reported usage (hybrid estimate)', async () => {
    await newSession('m-hybrid');
    const response = await post('m-hybrid', [
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        parts: [{ type: 'text', text: 'hello' }],
        finish: 'stop',
        usage: { input: 9000, output: 50, cacheRead: 1000 },
      },
      { role: 'user', parts: [{ type: 'text', text: 'and now?' }] },
    ]);
    expect(response.json().status).toMatchObject({
      tokens: 9000 + 1000 + 50 + count('and now?'),
      estimate: 'hybrid',
      overflow: false,
    });
  });

  it('reports a silent overflow (reported input above the window) in status', async () => {
    await newSession('m-silent', { id: 'small-model', contextWindow: 8_000, maxOutputTokens: 1_000 });
    const response = await post('m-silent', [
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        parts: [{ type: 'text', text: 'ok' }],
        finish: 'stop',
        usage: { input: 9_000, output: 2 },
      },
    ]);
    expect(response.json().status).toMatchObject({ overflow: true, usable: 7_000, estimate: 'hybrid' });
  });

  it('accepts usage at the int4 limit whose sum passes it, and the session stays readable (no 500 after commit)', async () => {
    // An unlimited window bounds no report (a bounded one refuses reports over ten windows, see
    // messages.usage-reports.test.ts), and its estimate is the stored count.
    await newSession('m-int4', { id: 'gpt-4o', contextWindow: 0 });
    const response = await post('m-int4', [
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        parts: [{ type: 'text', text: 'ok' }],
        finish: 'stop',
        usage: { input: 2_147_483_647, output: 2_147_483_647, cacheRead: 1, cacheWrite: 2_147_483_647 },
      },
    ]);
    expect(response.statusCode).toBe(201);
    expect(response.json().status).toMatchObject({ tokens: 2, calibrationTokens: 0, estimate: 'hybrid' });
    expect((await api.request({ method: 'GET', url: '/v1/sessions/m-int4' })).statusCode).toBe(200);
    expect(
      (await post('m-int4', [{ role: 'user', parts: [{ type: 'text', text: 'more' }] }])).statusCode,
    ).toBe(201);
    expect(await history('m-int4')).toHaveLength(3);
  });

  it.each([
    ['year 0', '0000-01-01T00:00:00Z'],
    ['an offset that carries past year 9999', '9999-12-31T23:59:59-23:59'],
    ['before 1970', '1969-12-31T23:59:59Z'],
  ])('refuses a createdAt of %s with 400 and writes nothing', async (_label, createdAt) => {
    const session = `m-date-${createdAt.slice(0, 4)}-${createdAt.length}`;
    await newSession(session);
    const response = await post(session, [
      { role: 'user', parts: [{ type: 'text', text: 'hi' }], createdAt },
    ]);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
    expect(await history(session)).toHaveLength(0);
  });

  it('stores one batch of 14 messages × 5,000 tool parts (70,000 call ids: one array parameter; messages and parts as one JSON statement)', async () => {
    await newSession('m-wide');
    const messages = Array.from({ length: 14 }, (_, m) => ({
      id: `wide-${m}`,
      role: 'assistant',
      parts: Array.from({ length: 5000 }, (_, p) => readCall(`c${m}_${p}`, 'ok')),
    }));
    const response = await post('m-wide', messages);
    expect(response.statusCode).toBe(201);
    const stored = await api.database.database.pool.query(
      "select count(*)::int as n from parts p join sessions s on s.pk = p.session_pk where s.id = 'm-wide'",
    );
    expect(stored.rows[0].n).toBe(70_000);
  });

  it('is idempotent by client id: an identical re-post returns the same seq and writes nothing', async () => {
    await newSession('m-idem');
    const batch = [{ id: 'only', role: 'user', parts: [{ type: 'text', text: 'once' }] }];
    expect((await post('m-idem', batch)).json().messages).toEqual([{ id: 'only', seq: 1, created: true }]);
    const again = await post('m-idem', batch);
    expect(again.statusCode).toBe(201);
    expect(again.json().messages).toEqual([{ id: 'only', seq: 1, created: false }]);
    expect(await history('m-idem')).toHaveLength(1);
  });

  it('answers 409 when an id is re-posted with different content, writing nothing of the batch', async () => {
    await newSession('m-conflict');
    await post('m-conflict', [{ id: 'x', role: 'user', parts: [{ type: 'text', text: 'original' }] }]);
    const response = await post('m-conflict', [
      { id: 'y', role: 'user', parts: [{ type: 'text', text: 'new' }] },
      { id: 'x', role: 'user', parts: [{ type: 'text', text: 'edited' }] },
    ]);
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({ code: 'conflict', details: { messageIds: ['x'] } });
    expect((await history('m-conflict')).map((m: { id: string }) => m.id)).toEqual(['x']);
  });

  it.each([
    ['a tool part on a user message', [{ role: 'user', parts: [readCall('c', 'x')] }]],
    [
      'a completed tool part without output',
      [{ role: 'assistant', parts: [{ type: 'tool', callId: 'c', tool: 't', status: 'completed' }] }],
    ],
    [
      'an errored tool part without error text',
      [{ role: 'assistant', parts: [{ type: 'tool', callId: 'c', tool: 't', status: 'error' }] }],
    ],
    [
      'a duplicate callId in one message',
      [{ role: 'assistant', parts: [readCall('c', 'x'), readCall('c', 'y')] }],
    ],
    [
      'duplicate message ids in one batch',
      [
        { id: 'd', role: 'user', parts: [] },
        { id: 'd', role: 'user', parts: [] },
      ],
    ],
    ['an unknown role', [{ role: 'tool', parts: [] }]],
    ['an unknown part type', [{ role: 'user', parts: [{ type: 'image', url: 'x' }] }]],
    ['usage on a user message', [{ role: 'user', parts: [], usage: { input: 1, output: 1 } }]],
    ['negative usage', [{ role: 'assistant', parts: [], usage: { input: -1, output: 1 } }]],
    ['a malformed createdAt', [{ role: 'user', parts: [], createdAt: 'yesterday' }]],
    ['an empty batch', []],
    ['a NUL byte in a text part', [{ role: 'user', parts: [{ type: 'text', text: 'a\u0000b' }] }]],
    ['a lone surrogate in a text part', [{ role: 'user', parts: [{ type: 'text', text: 'a\ud800b' }] }]],
    ['a NUL byte in a tool output', [{ role: 'assistant', parts: [readCall('c', 'bin\u0000ary')] }]],
    [
      'a NUL byte inside a tool input',
      [{ role: 'assistant', parts: [{ ...readCall('c', 'x'), input: { path: ['a', 'b\u0000'] } }] }],
    ],
    ['a NUL byte in a metadata key', [{ role: 'user', parts: [], metadata: { 'k\u0000': 1 } }]],
    [
      'metadata nested 65 deep',
      [{ role: 'user', parts: [], metadata: { a: JSON.parse(`${'['.repeat(65)}${']'.repeat(65)}`) } }],
    ],
    ['usage above int4', [{ role: 'assistant', parts: [], usage: { input: 2_147_483_648, output: 1 } }]],
    ['a float usage', [{ role: 'assistant', parts: [], usage: { input: 1.5, output: 1 } }]],
  ])('rejects %s with 400 and writes nothing', async (_label, messages) => {
    const before = (await history('m-bad')).length;
    const response = await post('m-bad', messages);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
    expect((await history('m-bad')).length).toBe(before);
  });

  it('answers 404 for a session that does not exist', async () => {
    const response = await post('nope', [{ role: 'user', parts: [] }]);
    expect(response.statusCode).toBe(404);
  });

  it('counts a 1 MB tool output with a 100,000-character run', async () => {
    await newSession('m-big');
    const output = `${'line of ordinary log output\n'.repeat(32_000)}${'A'.repeat(100_000)}`;
    const response = await post('m-big', [{ role: 'assistant', parts: [readCall('big', output)] }]);
    expect(response.statusCode).toBe(201);
    const [message] = await history('m-big');
    expect(message.parts[0].outputTokens).toBe(count(output));
  });
});

describe('PATCH /v1/sessions/:id/messages/:messageId', () => {
  it('finishes a streamed turn: tool result upserted by callId (input kept), usage and finish set', async () => {
    await newSession('m-stream');
    await post('m-stream', [
      {
        id: 'turn',
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'c1', tool: 'bash', status: 'running', input: { command: 'ls' } }],
      },
    ]);
    const response = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/m-stream/messages/turn',
      payload: {
        finish: 'tool-calls',
        usage: { input: 100, output: 10 },
        parts: [{ type: 'tool', callId: 'c1', tool: 'bash', status: 'completed', output: 'a.ts\nb.ts' }],
      },
    });
    expect(response.statusCode).toBe(200);
    const message = response.json();
    expect(message).toMatchObject({
      id: 'turn',
      finish: 'tool-calls',
      usage: { input: 100, output: 10, cacheRead: 0 },
    });
    expect(message.parts).toHaveLength(1);
    expect(message.parts[0]).toMatchObject({
      status: 'completed',
      input: { command: 'ls' },
      output: 'a.ts\nb.ts',
    });
    expect(message.parts[0].tokens).toBe(count('bash') + count('{"command":"ls"}') + count('a.ts\nb.ts'));
  });

  it("answers with the session's status after the update, as the append does", async () => {
    await newSession('m-patch-status');
    const appended = await post('m-patch-status', [
      { id: 'u', role: 'user', parts: [{ type: 'text', text: 'list the files' }] },
      {
        id: 'turn',
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'c1', tool: 'bash', status: 'running', input: { command: 'ls' } }],
      },
    ]);
    const before = appended.json().status;
    const output = Array.from({ length: 200 }, (_, i) => `file-${i}.ts`).join('\n');
    const response = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/m-patch-status/messages/turn',
      payload: {
        finish: 'tool-calls',
        parts: [{ type: 'tool', callId: 'c1', tool: 'bash', status: 'completed', output }],
      },
    });
    expect(response.statusCode).toBe(200);
    const { status } = response.json();
    const session = (await api.request({ method: 'GET', url: '/v1/sessions/m-patch-status' })).json();
    expect(status).toEqual(session.status);
    // The tool result now counts (its interrupted placeholder no longer does).
    expect(status.tokens).toBeGreaterThan(before.tokens + count(output) / 2);
    expect(status.contextMessages).toBe(2);
  });

  it('answers 409 when a result is posted as a new message instead of patching the unfinished call', async () => {
    await newSession('m-deferred');
    await post('m-deferred', [
      {
        id: 'calls',
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'c9', tool: 'bash', status: 'running', input: {} }],
      },
    ]);
    const response = await post('m-deferred', [
      {
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'c9', tool: 'bash', status: 'completed', input: {}, output: 'done' }],
      },
    ]);
    expect(response.statusCode).toBe(409);
    expect(response.json().error.message).toContain('PATCH /v1/sessions/:id/messages/calls');
  });

  it('answers 409 to a result for a call unfinished elsewhere whatever its input, by POST or PATCH', async () => {
    await newSession('m-deferred-input');
    await post('m-deferred-input', [
      {
        id: 'running',
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'c7', tool: 'bash', status: 'running', input: { command: 'ls' } }],
      },
      { id: 'other', role: 'assistant', parts: [{ type: 'text', text: 'meanwhile' }] },
    ]);
    const result = { type: 'tool', callId: 'c7', tool: 'bash', status: 'completed', output: 'a.ts' };
    for (const input of [undefined, null, {}, { command: 'pwd' }]) {
      const part = input === undefined ? result : { ...result, input };
      const posted = await post('m-deferred-input', [{ role: 'assistant', parts: [part] }]);
      expect(posted.statusCode, JSON.stringify(input)).toBe(409);
      expect(posted.json().error).toMatchObject({
        code: 'conflict',
        details: { callId: 'c7', messageId: 'running' },
      });
      const patched = await api.request({
        method: 'PATCH',
        url: '/v1/sessions/m-deferred-input/messages/other',
        payload: { parts: [part] },
      });
      expect(patched.statusCode, JSON.stringify(input)).toBe(409);
    }
    // The call still renders as the one call, unfinished; the PATCH it points to finishes it.
    const finished = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/m-deferred-input/messages/running',
      payload: { parts: [result] },
    });
    expect(finished.statusCode).toBe(200);
    const context = await api.request({
      method: 'GET',
      url: '/v1/sessions/m-deferred-input/context?format=openai',
    });
    const tools = (
      context.json().messages as Array<{ role: string; tool_call_id?: string; content: string }>
    ).filter((m) => m.role === 'tool');
    expect(tools).toEqual([expect.objectContaining({ tool_call_id: 'c7', content: 'a.ts' })]);
  });

  it('answers 409 for a tool status that moves backwards, 404 for an unknown message', async () => {
    await newSession('m-stream-bad');
    await post('m-stream-bad', [{ id: 't', role: 'assistant', parts: [readCall('c1', 'done')] }]);
    const backwards = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/m-stream-bad/messages/t',
      payload: { parts: [{ type: 'tool', callId: 'c1', tool: 'read', status: 'running' }] },
    });
    expect(backwards.statusCode).toBe(409);
    const missing = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/m-stream-bad/messages/none',
      payload: { finish: 'stop' },
    });
    expect(missing.statusCode).toBe(404);
  });
});

describe('GET /v1/sessions/:id/messages', () => {
  it('pages the raw history by seq', async () => {
    await newSession('m-page');
    await post(
      'm-page',
      Array.from({ length: 5 }, (_, i) => ({ role: 'user', parts: [{ type: 'text', text: `m${i}` }] })),
    );
    const first = (await api.request({ method: 'GET', url: '/v1/sessions/m-page/messages?limit=2' })).json();
    expect(first.messages.map((m: { seq: number }) => m.seq)).toEqual([1, 2]);
    expect(first.nextAfterSeq).toBe(2);
    expect(first.messages[0]).toMatchObject({
      role: 'user',
      summary: false,
      compactionId: null,
      finish: null,
    });
    const rest = (
      await api.request({ method: 'GET', url: '/v1/sessions/m-page/messages?afterSeq=2&limit=10' })
    ).json();
    expect(rest.messages.map((m: { seq: number }) => m.seq)).toEqual([3, 4, 5]);
    expect(rest.nextAfterSeq).toBeNull();
  });

  it.each(['limit=0', 'limit=1001', 'afterSeq=-1', 'limit=ten', 'cursor=3'])(
    'rejects ?%s with 400',
    async (query) => {
      await newSession('m-page-bad').catch(() => undefined);
      expect(
        (await api.request({ method: 'GET', url: `/v1/sessions/m-page-bad/messages?${query}` })).statusCode,
      ).toBe(400);
    },
  );
});
