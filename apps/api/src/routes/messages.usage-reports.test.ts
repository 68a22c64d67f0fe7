/**
 * Usage reports against Compactor's own counts (issue 36): whatever a client reports, the status
 * never shows less than the exact stored count of the context, the auto trigger fires where that
 * count crosses it, and a compaction never records more after than before. Reports no turn of
 * the model can have made (over ten context windows, reasoning above output) are refused with a
 * 400 on every write path, and nothing of the write is stored.
 */
import { describe, expect, it } from 'vitest';
import { getTokenizer } from '@compactor/tokenizer';
import { LARGE_BODY_BYTES } from '../http/unparsed-body';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { useInProcessWorker } from '../test-support/in-process-worker';

const api = useTestApi();
const worker = useInProcessWorker(api);

/** The issue's window: usable 7,168 − min(1,024, 32,000, 1,792) = 6,144; ten windows 71,680. */
const model = { id: 'loop-model', contextWindow: 7_168, maxOutputTokens: 1_024 };
const USABLE = 6_144;
/** A quarter of the usable input: the most a report may add over the stored count. */
const CALIBRATION_CAP = 1_536;

/** The API counts every model with o200k in tests: the exact count, computed here on its own. */
const o200k = getTokenizer('o200k_base');
const tokensOf = (text: string) => o200k.countSync(text);

const post = (session: string, body: unknown) =>
  api.request({ method: 'POST', url: `/v1/sessions/${session}/messages`, payload: body as object });
const get = (url: string) => api.request({ method: 'GET', url });

const words = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => `w${(i * 7919 + seed) % 1000}`).join(' ');
const user = (text: string) => ({ role: 'user', parts: [{ type: 'text', text }] });
const answer = (text: string, usage: Record<string, number> | null, finish: string | null = 'stop') => ({
  role: 'assistant',
  parts: [{ type: 'text', text }],
  finish,
  usage,
});

async function runAsWorker(compactionId: string) {
  return (await worker.run(compactionId)).compaction!;
}

describe('reports no turn of the model can have made: 400, nothing stored', () => {
  const refused: Array<[string, Record<string, number>, RegExp]> = [
    ['2³¹−1 input', { input: 2 ** 31 - 1, output: 10 }, /prompt .* of 2,147,483,647 tokens/],
    ['1,000× the window', { input: 7_168_000, output: 10 }, /prompt .* of 7,168,000 tokens/],
    [
      'a prompt over ten windows by its cache reads',
      { input: 40_000, output: 1, cacheRead: 40_000 },
      /of 80,000/,
    ],
    ['2³¹−1 output', { input: 100, output: 2 ** 31 - 1 }, /an output of 2,147,483,647 tokens/],
    [
      'reasoning above output (inconsistent)',
      { input: 100, output: 10, reasoning: 20 },
      /reasoning is part of output/,
    ],
  ];

  it.each(refused)('POST …/messages with %s', async (_name, usage, message) => {
    const id = `refused-${Object.values(usage).join('-')}`;
    await newSession(api, id, { model });
    expect(
      (await post(id, { messages: [user('hello'), answer('hi', { input: 50, output: 5 })] })).statusCode,
    ).toBe(201);
    const before = await api.counts();
    // A valid message ahead of the refused one: the batch is written whole or not at all.
    const response = await post(id, { messages: [user('next'), answer('and then', usage)] });
    expect(response.statusCode).toBe(400);
    const { error } = response.json();
    expect(error.code).toBe('validation_error');
    expect(error.message).toMatch(message);
    expect(error.details.issues[0].path).toMatch(/^body\.messages\.1\.usage/);
    if (!usage.reasoning)
      expect(error.message).toMatch(/7,168-token context window \(71,680\).*docs\/API\.md/);
    expect(await api.counts()).toEqual(before);
    const status = (await get(`/v1/sessions/${id}`)).json().status;
    expect(status).toMatchObject({ contextMessages: 2, overflow: false });
    expect(status.tokens).toBeLessThan(100);
  });

  it.each(refused)(
    'PATCH …/messages/:id finishing a streamed turn with %s',
    async (_name, usage, message) => {
      const id = `refused-patch-${Object.values(usage).join('-')}`;
      await newSession(api, id, { model });
      const streaming = { id: 'a1', ...answer('streaming…', null, null) };
      expect((await post(id, { messages: [user('hello'), streaming] })).statusCode).toBe(201);
      const before = await api.counts();
      const response = await api.request({
        method: 'PATCH',
        url: `/v1/sessions/${id}/messages/a1`,
        payload: { finish: 'stop', usage },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().error.message).toMatch(message);
      expect(await api.counts()).toEqual(before);
      const history = (await get(`/v1/sessions/${id}/messages`)).json().messages;
      expect(history.at(-1)).toMatchObject({ id: 'a1', finish: null, usage: null });
    },
  );

  it('a large body (parsed off the event loop) is refused the same way', async () => {
    const id = 'refused-large';
    await newSession(api, id, { model });
    const before = await api.counts();
    const big = 'x'.repeat(LARGE_BODY_BYTES + 1024);
    const response = await api.request({
      method: 'POST',
      url: `/v1/sessions/${id}/messages`,
      payload: JSON.stringify({ messages: [user(big), answer('ok', { input: 2 ** 31 - 1, output: 1 })] }),
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toMatch(/prompt .* of 2,147,483,647 tokens/);
    expect(response.json().error.details.issues[0].path).toBe('body.messages.1.usage');
    expect(await api.counts()).toEqual(before);
  });

  it('a report over the window but within ten windows is a report (a silent overflow), and stored', async () => {
    const id = 'accepted-overflow';
    await newSession(api, id, { model });
    const response = await post(id, { messages: [user('hello'), answer('hi', { input: 9_000, output: 5 })] });
    expect(response.statusCode).toBe(201);
    // The provider says the prompt overflowed: an emergency, with the estimate still bounded.
    expect(response.json().compaction).toMatchObject({ reason: 'overflow' });
    expect(response.json().status.tokens).toBeLessThanOrEqual(
      tokensOf('hello') + tokensOf('hi') + CALIBRATION_CAP,
    );
  });
});

describe('an agent loop whose reports are zero, tiny or made up (1,000 × turn)', () => {
  /** Report kinds in turn, all below what the context holds: the stored count is the truth. */
  const reportOf = (turn: number): Record<string, number> =>
    [
      { input: 0, output: 0 },
      { input: 1, output: 1 },
      { input: 1_000 * turn, output: 10 },
    ][turn % 3]!;

  it('shows the exact count, fires where it crosses the trigger, and the compaction shrinks it', async () => {
    const id = 'loop';
    await newSession(api, id, { model });
    let exact = 0;
    let started: { id: string } | null = null;
    let turn = 0;
    let lastReport: Record<string, number> = {};
    while (started === null) {
      turn += 1;
      expect(turn, 'the trigger never fired').toBeLessThan(40);
      const question = words(150, turn);
      const reply = words(1_100, turn * 31);
      lastReport = reportOf(turn);
      const response = await post(id, { messages: [user(question), answer(reply, lastReport)] });
      expect(response.statusCode).toBe(201);
      exact += tokensOf(question) + tokensOf(reply);
      const { status, compaction } = response.json();
      // Every report is below the stored count: the estimate is that count, exactly.
      expect(status.tokens).toBe(exact);
      expect(status.calibrationTokens).toBe(0);
      // Turn 1 reports a prompt; a zero report is none, so the newest one with a prompt still
      // calibrates the estimate (to nothing).
      expect(status.estimate).toBe('hybrid');
      // The trigger fires on the first append whose exact count is over the usable input.
      expect(compaction !== null, `turn ${turn}: ${exact} tokens`).toBe(exact > USABLE);
      started = compaction;
    }
    expect(started).toMatchObject({ reason: 'auto' });

    const row = await runAsWorker(started.id);
    expect(row.tokensBefore).toBe(exact);
    expect(row.tokensAfter).toBeLessThanOrEqual(row.tokensBefore!);
    // What the report-based estimate measured (the last report, nothing after it): a compaction
    // that started from it recorded more after than before.
    const reportedBefore = lastReport.input! + lastReport.output!;
    expect(reportedBefore).toBeLessThan(row.tokensAfter!);

    // Once it completed, the served context fits, and the status is at least what it holds.
    const context = (await get(`/v1/sessions/${id}/context`)).json();
    const status = (await get(`/v1/sessions/${id}`)).json().status;
    expect(status.usable).toBe(USABLE);
    expect(context.tokens).toBeLessThanOrEqual(USABLE);
    expect(status.tokens).toBeGreaterThanOrEqual(context.tokens);

    // More turns on the compacted session: the estimate stays at least the stored count.
    for (let next = turn + 1; next <= turn + 3; next++) {
      const response = await post(id, {
        messages: [user(words(50, next)), answer(words(50, next), reportOf(next))],
      });
      expect(response.statusCode).toBe(201);
      const served = (await get(`/v1/sessions/${id}/context`)).json().tokens;
      expect(response.json().status.tokens).toBeGreaterThanOrEqual(served);
      expect(response.json().status.tokens).toBeLessThanOrEqual(served + CALIBRATION_CAP);
    }
  });

  it('a report above the stored count adds at most a quarter of the usable input', async () => {
    const id = 'loop-high';
    await newSession(api, id, { model });
    const question = words(100, 1);
    const reply = words(100, 2);
    const exact = tokensOf(question) + tokensOf(reply);
    // Within the window (no overflow), far above the ~200 stored tokens.
    const response = await post(id, {
      messages: [user(question), answer(reply, { input: 7_000, output: 10 })],
    });
    expect(response.json().status).toMatchObject({
      tokens: exact + CALIBRATION_CAP,
      calibrationTokens: CALIBRATION_CAP,
      estimate: 'hybrid',
      overflow: false,
    });
    expect(response.json().compaction).toBeNull();
    // An honest one adds what it saw besides the stored messages (a system prompt, tool schemas).
    const honest = await post(id, {
      messages: [user('go on'), answer('done', { input: exact + 500, output: 1 })],
    });
    const stored = exact + tokensOf('go on') + tokensOf('done');
    expect(honest.json().status).toMatchObject({
      tokens: exact + 500 + 1,
      calibrationTokens: exact + 500 + 1 - stored,
    });
  });
});
