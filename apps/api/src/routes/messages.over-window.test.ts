/**
 * Never stuck: while a session is over its usable window, an append or an overflow report leads
 * to a compaction, whatever the last one did (ineffective, outrun by appends, failed, skipped),
 * except after the one failure no compaction can fix (the pinned system messages alone do not
 * fit), which holds appends until the session grew: no loop. Compactions are ended here by
 * writing their rows, as a worker would.
 */
import { describe, expect, it } from 'vitest';
import { updateCompaction, type CompactionPatch } from '@compactor/db';
import { useTestApi } from '../test-support/api';
import { compactionsOf, newSession as createSession } from '../test-support/helpers';

const api = useTestApi();
/** Usable 7,000 tokens (window 8,000 − reserve 1,000); a quarter of it is 1,750. */
const tiny = { id: 'tiny-model', contextWindow: 8_000, maxOutputTokens: 1_000 };
const post = (session: string, messages: unknown[]) =>
  api.request({ method: 'POST', url: `/v1/sessions/${session}/messages`, payload: { messages } });
/** A user message of about `tokens` stored tokens. */
const history = (tokens: number) => ({
  role: 'user',
  parts: [{ type: 'text', text: ' word'.repeat(tokens) }],
});
/**
 * A session holding 6,000 stored tokens: the history the turns' reports measure. A report adds
 * at most 1,750 over the stored count, so reports of 7,500 to 7,750 put it over the window.
 */
const newSession = async (id: string) => {
  await createSession(api, id, { model: tiny });
  expect((await post(id, [history(6_000)])).statusCode).toBe(201);
};
const question = { role: 'user', parts: [{ type: 'text', text: 'next?' }] };
/** A finished turn whose provider reported a prompt of `input` tokens. */
const turn = (input: number) => ({
  role: 'assistant',
  parts: [{ type: 'text', text: 'done' }],
  finish: 'stop',
  usage: { input, output: 10 },
});
/** Appends a question and a turn; the compaction the append started, or null. */
const append = async (session: string, input: number) =>
  (await post(session, [question, turn(input)])).json().compaction as { id: string; reason: string } | null;
const end = (id: string, patch: CompactionPatch) =>
  updateCompaction(api.database.db, id, { finishedAt: new Date(), ...patch });

describe('a session over its usable window', () => {
  it.each<[string, CompactionPatch]>([
    // Completed at 7,400 tokens: messages appended while it ran, or a tail it could not shrink.
    ['an outrun or ineffective compaction', { status: 'completed', tokensAfter: 7_400, boundarySeq: 1 }],
    ['a compaction failed on an LLM outage', { status: 'failed', errorCode: 'llm_retries_exhausted' }],
    ['a skipped compaction', { status: 'skipped', errorCode: 'nothing_to_compact' }],
  ])('gets another compaction on the next append after %s', async (label, patch) => {
    const id = `w-${label.split(' ').at(-2)}`;
    await newSession(id);
    const first = await append(id, 7_500);
    expect(first).toMatchObject({ reason: 'auto' });
    await end(first!.id, { tokensBefore: 7_510, coversThroughSeq: 2, ...patch });

    // 200 tokens more: below the usable window the loop guards would hold until 1,750 more.
    const next = await append(id, 7_700);
    expect(next).toMatchObject({ reason: 'auto' });
    expect(await compactionsOf(api, id)).toHaveLength(2);
  });

  it('asks for at most one compaction per append while compactions keep failing', async () => {
    await newSession('w-outage');
    let started = await append('w-outage', 7_500);
    for (const input of [7_600, 7_700, 7_800]) {
      // While one is active, appends start nothing; once it failed, the next append asks again.
      expect(await append('w-outage', input)).toBeNull();
      await end(started!.id, { status: 'failed', errorCode: 'llm_fatal', tokensBefore: input });
      started = await append('w-outage', input + 10);
      expect(started).toMatchObject({ reason: 'auto' });
    }
    expect(await compactionsOf(api, 'w-outage')).toHaveLength(4);
  });

  it('does not loop when its pinned system messages alone do not fit', async () => {
    await newSession('w-pinned');
    const first = await append('w-pinned', 7_500);
    await end(first!.id, { status: 'failed', errorCode: 'context_cannot_fit', tokensBefore: 7_510 });
    for (const input of [7_600, 8_000, 9_200]) expect(await append('w-pinned', input)).toBeNull();
    expect(await compactionsOf(api, 'w-pinned')).toHaveLength(1);
    // Grown by a quarter of the threshold since (a new model, say, may leave room): one more try.
    const grown = await post('w-pinned', [history(1_750), question, turn(7_510 + 1_750)]);
    expect(grown.json().compaction).toMatchObject({ reason: 'overflow' });
  });

  it('an overflow report starts a compaction after any failure', async () => {
    await newSession('w-report');
    const first = await append('w-report', 7_500);
    await end(first!.id, { status: 'failed', errorCode: 'llm_fatal', tokensBefore: 7_510 });
    const report = await api.request({
      method: 'POST',
      url: '/v1/sessions/w-report/overflow',
      payload: { error: 'context_length_exceeded', status: 400 },
    });
    expect(report.json()).toMatchObject({ overflow: true, compaction: { reason: 'overflow' } });
  });
});
