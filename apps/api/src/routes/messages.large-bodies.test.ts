/**
 * Append bodies of 1 MiB and more are parsed, validated, counted and serialised in a worker
 * thread (@compactor/sessions' large-bodies). What the client sees and what is stored must not depend on the
 * path: these post the same content both ways and compare.
 */
import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { LARGE_BODY_BYTES } from '../http/unparsed-body';

const api = useTestApi();
const refusing = useTestApi({ bodyLimit: 2 * LARGE_BODY_BYTES, server: { largeAppendsInFlight: 0 } });

/** About 300 KB of tool log with non-ASCII text, so four of these make a large body. */
const log = (seed: number) =>
  Array.from({ length: 6_000 }, (_, i) => `${seed}:${i} FAIL src/app.ts — expected 42 ✗ 失败 🚀`).join('\n');

/** Messages covering every part type, with unsorted tool-input keys and explicit instants. */
function messages(prefix: string) {
  return [
    {
      id: `${prefix}-u`,
      role: 'user',
      parts: [{ type: 'text', text: `read the log ${log(1)}` }],
      createdAt: '2026-01-05T10:00:00.000Z',
      metadata: { z: 1, a: { nested: ['x'] } },
    },
    {
      id: `${prefix}-a1`,
      role: 'assistant',
      parts: [
        { type: 'reasoning', text: log(2) },
        {
          type: 'tool',
          callId: 'call_1',
          tool: 'bash',
          status: 'completed',
          input: { cmd: 'npm test', cwd: '/work', env: { B: '2', A: '1' } },
          output: log(3),
        },
      ],
      finish: 'tool-calls',
      usage: { input: 1200, output: 40 },
      createdAt: '2026-01-05T10:00:01.000Z',
    },
    {
      id: `${prefix}-a2`,
      role: 'assistant',
      parts: [
        { type: 'text', text: log(4) },
        { type: 'file', mime: 'image/png', filename: 'shot.png', url: 'https://example.test/shot.png' },
      ],
      finish: 'stop',
      error: 'partial output',
      createdAt: '2026-01-05T10:00:02.000Z',
    },
  ];
}

const post = (target: typeof api, session: string, body: unknown) =>
  target.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });

/** The stored rows of a session, without what is its own (pks, the session). */
async function storedRows(session: string) {
  const { rows } = await api.database.database.pool.query(
    `select m.id, m.seq, m.role, m.finish, m.error, m.usage_input, m.usage_output, m.metadata,
            m.content_hash, m.created_at,
            p.idx, p.type, p.text, p.call_id, p.tool, p.tool_status, p.tool_input, p.tool_output,
            p.tool_error, p.mime, p.filename, p.url, p.tokens, p.output_tokens
       from messages m join sessions s on s.pk = m.session_pk join parts p on p.message_pk = m.pk
      where s.id = $1 order by m.seq, p.idx`,
    [session],
  );
  return rows;
}

describe('a large append body', () => {
  it('stores exactly the rows, token counts and hashes that small bodies of the same messages store', async () => {
    await newSession(api, 'lb-large');
    await newSession(api, 'lb-small');
    const batch = messages('m');
    const large = JSON.stringify({ messages: batch });
    expect(Buffer.byteLength(large)).toBeGreaterThanOrEqual(LARGE_BODY_BYTES);

    const viaLarge = await post(api, 'lb-large', large);
    expect(viaLarge.statusCode, viaLarge.body).toBe(201);
    for (const message of batch) {
      const body = JSON.stringify({ messages: [message] });
      expect(Buffer.byteLength(body)).toBeLessThan(LARGE_BODY_BYTES);
      const viaSmall = await post(api, 'lb-small', body);
      expect(viaSmall.statusCode, viaSmall.body).toBe(201);
    }

    const [largeRows, smallRows] = [await storedRows('lb-large'), await storedRows('lb-small')];
    expect(largeRows).toHaveLength(5);
    expect(largeRows).toEqual(smallRows);
    expect(largeRows.filter((row) => row.type !== 'file').every((row) => row.tokens > 10_000)).toBe(true);
    // The large path's answer: every message created, in order.
    expect(viaLarge.json().messages).toEqual(batch.map((m, i) => ({ id: m.id, seq: i + 1, created: true })));
  });

  it('is idempotent when posted again, and a conflict when posted again with other content', async () => {
    await newSession(api, 'lb-repost');
    const batch = messages('r');
    expect((await post(api, 'lb-repost', { messages: batch })).statusCode).toBe(201);

    const again = await post(api, 'lb-repost', { messages: batch });
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json().messages.map((m: { created: boolean }) => m.created)).toEqual([false, false, false]);

    const changed = structuredClone(batch);
    changed[2]!.parts[0] = { type: 'text', text: log(5) };
    const conflict = await post(api, 'lb-repost', { messages: changed });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.details).toEqual({ messageIds: ['r-a2'] });
    expect(await storedRows('lb-repost')).toHaveLength(5);
  });

  it('is refused as a small body is: same status, same error, nothing written', async () => {
    await newSession(api, 'lb-bad');
    const misplaced = messages('b');
    // A tool part on a user message.
    misplaced[0]!.parts.push({ type: 'tool', callId: 'c', tool: 't', status: 'pending' } as never);
    // The same messages with short texts: a small body.
    const small = structuredClone(misplaced) as Array<{ parts: Array<Record<string, unknown>> }>;
    for (const message of small) {
      message.parts = message.parts.map((p) => ({
        ...p,
        ...('text' in p ? { text: 'x' } : {}),
        ...('output' in p ? { output: 'x' } : {}),
      }));
    }

    const cases: Array<[string, string]> = [
      [JSON.stringify({ messages: misplaced }), JSON.stringify({ messages: small })],
      // Not JSON.
      [`${JSON.stringify({ messages: messages('j') })}}`, `${JSON.stringify({ messages: [] })}}`],
      // A `__proto__` key, escaped: Fastify's parser refuses it.
      [
        JSON.stringify({ messages: messages('p') }).replace(
          '"metadata":{',
          '"metadata":{"\\u005f_proto__":{},',
        ),
        JSON.stringify({ messages: small }).replace('"metadata":{', '"metadata":{"\\u005f_proto__":{},'),
      ],
    ];
    for (const [large, smallBody] of cases) {
      expect(Buffer.byteLength(large)).toBeGreaterThanOrEqual(LARGE_BODY_BYTES);
      expect(Buffer.byteLength(smallBody)).toBeLessThan(LARGE_BODY_BYTES);
      const [viaLarge, viaSmall] = [await post(api, 'lb-bad', large), await post(api, 'lb-bad', smallBody)];
      expect(viaLarge.statusCode).toBe(400);
      expect(viaLarge.json()).toEqual(viaSmall.json());
    }
    expect(await storedRows('lb-bad')).toHaveLength(0);
  });

  it('leaves the event loop free while it is prepared: other requests and ticks run meanwhile', async () => {
    await newSession(api, 'lb-loop');
    const large = JSON.stringify({ messages: [0, 1, 2, 3].flatMap((k) => messages(`l${k}`)) });
    let ticks = 0;
    let appending = true;
    const ticker = (async () => {
      while (appending) {
        ticks += 1;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const order: string[] = [];
    const append = post(api, 'lb-loop', large).then((response) => {
      order.push('append');
      appending = false;
      return response;
    });
    // Sent once the append's handler has handed the body to the thread.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const read = api.request({ method: 'GET', url: '/v1/sessions/lb-loop' }).then((response) => {
      order.push('read');
      return response;
    });
    const [appended, readResponse] = await Promise.all([append, read]);
    await ticker;
    expect(appended.statusCode, appended.body).toBe(201);
    expect(readResponse.statusCode).toBe(200);
    expect(order).toEqual(['read', 'append']);
    // The event loop went round many times while the body was prepared and written.
    expect(ticks).toBeGreaterThan(100);
  });

  it('past the process limit on large appends in flight is a 429 with Retry-After; past the body limit a 413; small bodies are served', async () => {
    await newSession(refusing, 'lb-full');
    const refused = await post(refusing, 'lb-full', { messages: messages('f') });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('2');
    expect(refused.json().error.code).toBe('too_many_requests');
    // Its reader keeps the body limit: 413, as for any other route.
    const tooLarge = await post(refusing, 'lb-full', {
      messages: [0, 1, 2].flatMap((k) => messages(`t${k}`)),
    });
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.json().error.code).toBe('payload_too_large');
    const small = await post(refusing, 'lb-full', {
      messages: [{ role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
    });
    expect(small.statusCode).toBe(201);
  });
});
