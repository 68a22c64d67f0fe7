import { describe, expect, it } from 'vitest';
import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import { useTestApi } from '../test-support/api';

/**
 * An append counts its batch with the model the session had at its last append in this process,
 * and the append itself checks that under the session's lock. These are the cases where the guess
 * is wrong: another replica changed the model, this one did, the session was deleted and created
 * again with the same id.
 */
// Each model's own encoding, as the API's TOKENIZER_ENCODING=auto picks it.
const api = useTestApi({ tokenizerFor: (model) => getTokenizer(encodingForModel(model)) });
// Counted differently by the two encodings (checked below), so the stored count shows which one counted.
const TEXT = 'Refactor the 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 normaliser: ﬁx “smart quotes” and 日本語のテキスト handling.';
const o200k = getTokenizer('o200k_base').countSync(TEXT);
const cl100k = getTokenizer('cl100k_base').countSync(TEXT);

async function create(id: string, model: string) {
  const response = await api.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: model } },
  });
  expect(response.statusCode).toBe(201);
}

async function append(session: string, id: string) {
  const response = await api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: { messages: [{ id, role: 'user', parts: [{ type: 'text', text: TEXT }] }] },
  });
  expect(response.statusCode).toBe(201);
  return response.json() as { messages: Array<{ id: string; seq: number; created: boolean }> };
}

async function storedTokens(session: string, id: string) {
  const page = (await api.request({ method: 'GET', url: `/v1/sessions/${session}/messages` })).json();
  return (page.messages as Array<{ id: string; parts: Array<{ tokens: number }> }>).find((m) => m.id === id)
    ?.parts[0]?.tokens;
}

describe('the model an append counts with', () => {
  it('differs between the two encodings for the test text', () => {
    expect(o200k).not.toBe(cl100k);
  });

  it('follows a model change made by another replica (straight in the database)', async () => {
    await create('sm-replica', 'gpt-4o');
    await append('sm-replica', 'u1');
    expect(await storedTokens('sm-replica', 'u1')).toBe(o200k);
    await api.database.database.pool.query(`update sessions set model_id = 'gpt-4' where id = 'sm-replica'`);
    expect((await append('sm-replica', 'u2')).messages).toEqual([{ id: 'u2', seq: 2, created: true }]);
    expect(await storedTokens('sm-replica', 'u2')).toBe(cl100k);
    // Counted with cl100k from now on, first time right.
    await append('sm-replica', 'u3');
    expect(await storedTokens('sm-replica', 'u3')).toBe(cl100k);
  });

  it('follows a PATCH of the model', async () => {
    await create('sm-patch', 'gpt-4');
    await append('sm-patch', 'u1');
    expect(await storedTokens('sm-patch', 'u1')).toBe(cl100k);
    const patched = await api.request({
      method: 'PATCH',
      url: '/v1/sessions/sm-patch',
      payload: { model: { id: 'gpt-4o' } },
    });
    expect(patched.statusCode).toBe(200);
    await append('sm-patch', 'u2');
    expect(await storedTokens('sm-patch', 'u2')).toBe(o200k);
  });

  it('appends to the new session after the old one was deleted and its id taken again', async () => {
    await create('sm-again', 'gpt-4o');
    await append('sm-again', 'u1');
    expect((await api.request({ method: 'DELETE', url: '/v1/sessions/sm-again' })).statusCode).toBe(204);
    const gone = await api.request({
      method: 'POST',
      url: '/v1/sessions/sm-again/messages',
      payload: { messages: [{ id: 'u2', role: 'user', parts: [{ type: 'text', text: TEXT }] }] },
    });
    expect(gone.statusCode).toBe(404);
    await create('sm-again', 'gpt-4');
    expect((await append('sm-again', 'u3')).messages).toEqual([{ id: 'u3', seq: 1, created: true }]);
    expect(await storedTokens('sm-again', 'u3')).toBe(cl100k);
  });
});
