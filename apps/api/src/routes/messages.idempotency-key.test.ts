/**
 * `Idempotency-Key` on appends: messages sent without an id get ids derived from the key, so the
 * same key and batch again are a re-post, stored once, on the small-body path and on the
 * large-body (worker thread) path alike; the key with other messages is a 409; another key, or
 * the same key in another session, is another batch.
 */
import { describe, expect, it } from 'vitest';
import { keyedIdPrefix } from '@compactor/sessions';
import { LARGE_BODY_BYTES } from '../http/unparsed-body';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';

const api = useTestApi();

const batch = (text: string) => [
  { role: 'user', parts: [{ type: 'text', text }] },
  { role: 'assistant', parts: [{ type: 'text', text: `answer to ${text}` }], finish: 'stop' },
];

const append = (session: string, messages: unknown[], key?: string) =>
  api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload: JSON.stringify({ messages }),
  });

async function storedIds(session: string): Promise<string[]> {
  const { rows } = await api.database.database.pool.query<{ id: string }>(
    'select m.id from messages m join sessions s on s.pk = m.session_pk where s.id = $1 order by m.seq',
    [session],
  );
  return rows.map((row) => row.id);
}

type Appended = { messages: Array<{ id: string; seq: number; created: boolean }> };

describe('an append with an Idempotency-Key', () => {
  it('stores a batch sent twice with the same key once, and answers the second as a re-post', async () => {
    await newSession(api, 'ik-same');
    const first = await append('ik-same', batch('hello'), 'retry-1');
    expect(first.statusCode, first.body).toBe(201);
    const ids = first.json<Appended>().messages.map((m) => m.id);
    const prefix = keyedIdPrefix('tenant-a', 'ik-same', 'retry-1');
    expect(prefix).toMatch(/^idem_[0-9a-f]{32}$/);
    expect(ids).toEqual([`${prefix}_0`, `${prefix}_1`]);

    const again = await append('ik-same', batch('hello'), 'retry-1');
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json<Appended>().messages).toEqual([
      { id: ids[0], seq: 1, created: false },
      { id: ids[1], seq: 2, created: false },
    ]);
    expect(await storedIds('ik-same')).toEqual(ids);
  });

  it('refuses the same key with other messages (409), and stores nothing of them', async () => {
    await newSession(api, 'ik-other');
    expect((await append('ik-other', batch('hello'), 'k')).statusCode).toBe(201);
    const other = await append('ik-other', batch('something else'), 'k');
    expect(other.statusCode).toBe(409);
    expect(other.json()).toMatchObject({ error: { code: 'conflict' } });
    expect(await storedIds('ik-other')).toHaveLength(2);
  });

  it('stores the batch again under another key, and without a key', async () => {
    await newSession(api, 'ik-keys');
    expect((await append('ik-keys', batch('hello'), 'a')).statusCode).toBe(201);
    expect((await append('ik-keys', batch('hello'), 'b')).statusCode).toBe(201);
    expect((await append('ik-keys', batch('hello'))).statusCode).toBe(201);
    const ids = await storedIds('ik-keys');
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(6);
  });

  it('gives the same key other ids in another session', async () => {
    await newSession(api, 'ik-s1');
    await newSession(api, 'ik-s2');
    expect((await append('ik-s1', batch('hello'), 'shared')).statusCode).toBe(201);
    expect((await append('ik-s2', batch('hello'), 'shared')).statusCode).toBe(201);
    const [one, two] = [await storedIds('ik-s1'), await storedIds('ik-s2')];
    expect(one).toHaveLength(2);
    expect(two.some((id) => one.includes(id))).toBe(false);
  });

  it('keeps the ids a message brings, and refuses an own id that the key gives another message', async () => {
    await newSession(api, 'ik-mixed');
    const [user, assistant] = batch('hello');
    const mixed = await append('ik-mixed', [{ ...user, id: 'mine' }, assistant], 'k');
    expect(mixed.statusCode, mixed.body).toBe(201);
    const ids = mixed.json<Appended>().messages.map((m) => m.id);
    expect(ids[0]).toBe('mine');
    expect(ids[1]).toMatch(/^idem_[0-9a-f]{32}_1$/);

    const clash = await append('ik-mixed', [{ ...user, id: ids[1] }, assistant, user], 'k');
    expect(clash.statusCode).toBe(400);
    expect(clash.json()).toMatchObject({ error: { code: 'validation_error' } });
    expect(await storedIds('ik-mixed')).toEqual(ids);
  });

  it('validates the header as compaction requests do', async () => {
    await newSession(api, 'ik-bad');
    for (const key of ['', 'x'.repeat(201), 'tab\tinside']) {
      const answer = await append('ik-bad', batch('hello'), key);
      expect(answer.statusCode, JSON.stringify(key)).toBe(400);
    }
    expect((await append('ik-bad', batch('hello'), 'x'.repeat(200))).statusCode).toBe(201);
    expect(await storedIds('ik-bad')).toHaveLength(2);
  });

  it('derives the same ids on the large-body path, and a retry there is stored once', async () => {
    await newSession(api, 'ik-large');
    const text = `log ${'FAIL src/app.ts — expected 42 ✗ 失败 🚀\n'.repeat(30_000)}`;
    const large = batch(text);
    expect(Buffer.byteLength(JSON.stringify({ messages: large }))).toBeGreaterThanOrEqual(LARGE_BODY_BYTES);
    const first = await append('ik-large', large, 'big');
    expect(first.statusCode, first.body).toBe(201);
    const again = await append('ik-large', large, 'big');
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json<Appended>().messages.map((m) => m.created)).toEqual([false, false]);
    const prefix = keyedIdPrefix('tenant-a', 'ik-large', 'big');
    expect(await storedIds('ik-large')).toEqual([`${prefix}_0`, `${prefix}_1`]);
  });
});
