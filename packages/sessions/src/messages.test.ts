/**
 * Appends at the package's boundary, on a real database: a batch counted exactly and in order,
 * idempotence by message id, the refusals (a changed re-post, a full write queue, a usage
 * report no turn can have made, an unknown or another tenant's session) and that a refused
 * append writes nothing. Large bodies take the same path through the worker thread.
 */
import { describe, expect, it } from 'vitest';
import { ConflictError } from '@compactor/db';
import { getTokenizer } from '@compactor/tokenizer';
import { InvalidInput, SessionNotFound, SessionWritesQueued, UnparsableBody } from './errors';
import { historyPage } from './history-page';
import { SessionMessages, type AppendBody } from './messages';
import { messageIdsOf } from './test-support/counts';
import { newSession, parsedMessages, useTestSessions, userText } from './test-support/session-resources';

const t = useTestSessions();
const count = (text: string) => getTokenizer('o200k_base').countSync(text);

const parsed = parsedMessages;
/** A body the transport left unparsed, as bytes (what a large body arrives as). */
const unparsed = (json: string): AppendBody => ({ kind: 'unparsed', segments: [Buffer.from(json)] });

const append = (tenantId: string, id: string, body: AppendBody, messages = t.messages) =>
  messages.append({ tenantId, id }, body, t.log);
const text = (id: string, words: string) => ({ id, role: 'user', parts: [{ type: 'text', text: words }] });

describe('SessionMessages.append', () => {
  it('appends a batch in order with exact token counts, and answers the status', async () => {
    const session = await newSession(t, 'tenant-a', 'm-batch');
    const answer = await append(
      'tenant-a',
      'm-batch',
      parsed([
        text('u1', 'Please read the config loader.'),
        { id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'Reading it.' }], finish: 'stop' },
      ]),
    );
    expect(answer.messages).toEqual([
      { id: 'u1', seq: 1, created: true },
      { id: 'a1', seq: 2, created: true },
    ]);
    expect(answer.compaction).toBeNull();
    expect(answer.status).toMatchObject({
      tokens: count('Please read the config loader.') + count('Reading it.'),
      estimate: 'stored',
    });
    const page = await historyPage(
      t.database.db,
      { tenantId: 'tenant-a', id: 'm-batch' },
      { afterSeq: 0, limit: 10 },
    );
    expect(page.messages.map((m) => [m.id, m.seq])).toEqual([
      ['u1', 1],
      ['a1', 2],
    ]);
    expect(await messageIdsOf(t.database.db, session.pk)).toEqual(['u1', 'a1']);
  });

  it('is idempotent by message id: the same message again keeps its seq and writes nothing', async () => {
    const session = await newSession(t, 'tenant-a', 'm-idem');
    const batch = parsed([text('only', 'once')]);
    expect((await append('tenant-a', 'm-idem', batch)).messages).toEqual([
      { id: 'only', seq: 1, created: true },
    ]);
    expect((await append('tenant-a', 'm-idem', batch)).messages).toEqual([
      { id: 'only', seq: 1, created: false },
    ]);
    expect(await messageIdsOf(t.database.db, session.pk)).toEqual(['only']);
  });

  it('refuses a re-post with other content (ConflictError naming the ids), writing nothing of the batch', async () => {
    const session = await newSession(t, 'tenant-a', 'm-changed');
    await append('tenant-a', 'm-changed', parsed([text('x', 'original')]));
    const refused = await append(
      'tenant-a',
      'm-changed',
      parsed([text('y', 'new'), text('x', 'edited')]),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as ConflictError).details).toMatchObject({ messageIds: ['x'] });
    expect(await messageIdsOf(t.database.db, session.pk)).toEqual(['x']);
  });

  it("refuses an unknown session, and another tenant's, with SessionNotFound", async () => {
    const session = await newSession(t, 'tenant-a', 'm-mine');
    await expect(append('tenant-a', 'm-nope', parsed([text('a', 'hi')]))).rejects.toBeInstanceOf(
      SessionNotFound,
    );
    await expect(append('tenant-b', 'm-mine', parsed([text('a', 'hi')]))).rejects.toBeInstanceOf(
      SessionNotFound,
    );
    expect(await messageIdsOf(t.database.db, session.pk)).toEqual([]);
  });

  it('refuses a session deleted after the process last wrote to it', async () => {
    await newSession(t, 'tenant-a', 'm-deleted');
    await append('tenant-a', 'm-deleted', parsed([text('a', 'hi')]));
    await t.database.db.$client.query(
      `delete from sessions where tenant_id = 'tenant-a' and id = 'm-deleted'`,
    );
    await expect(append('tenant-a', 'm-deleted', parsed([text('b', 'again')]))).rejects.toBeInstanceOf(
      SessionNotFound,
    );
  });

  it('refuses a usage report no turn of the model can have made, naming it, and writes nothing', async () => {
    const session = await newSession(t, 'tenant-a', 'm-usage');
    const refused = await append(
      'tenant-a',
      'm-usage',
      parsed([
        text('u', 'hi'),
        { id: 'a', role: 'assistant', parts: [], finish: 'stop', usage: { input: 10_000_000, output: 1 } },
      ]),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidInput);
    const { issues, message } = refused as InvalidInput;
    expect(issues?.map((i) => i.path)).toEqual(['body.messages.1.usage']);
    expect(message).toMatch(/^invalid request: body\.messages\.1\.usage: /);
    expect(await messageIdsOf(t.database.db, session.pk)).toEqual([]);
  });

  it('past the session write queue limit, refuses with SessionWritesQueued and writes nothing of it', async () => {
    const session = await newSession(t, 'tenant-a', 'm-busy');
    // No write may wait behind a running one: the second of two at once is refused.
    const strict = new SessionMessages(t.resources, t.limits, { sessionWriteQueueLimit: 0 });
    try {
      const [first, second] = await Promise.allSettled([
        append('tenant-a', 'm-busy', parsed([text('first', 'one')]), strict),
        append('tenant-a', 'm-busy', parsed([text('second', 'two')]), strict),
      ]);
      expect(first.status).toBe('fulfilled');
      const refused = second.status === 'rejected' ? (second.reason as unknown) : null;
      expect(refused).toBeInstanceOf(SessionWritesQueued);
      expect(refused).toMatchObject({ retryAfterSeconds: 1 });
      expect(await messageIdsOf(t.database.db, session.pk)).toEqual(['first']);
      // Another session has a queue of its own, and the place frees once the write is done.
      await newSession(t, 'tenant-a', 'm-calm');
      await append('tenant-a', 'm-calm', parsed([text('c', 'calm')]), strict);
      await append('tenant-a', 'm-busy', parsed([text('later', 'three')]), strict);
      expect(await messageIdsOf(t.database.db, session.pk)).toEqual(['first', 'later']);
    } finally {
      await strict.close();
    }
  });
});

describe('SessionMessages.append of an unparsed (large) body', () => {
  it('writes exactly what the parsed body writes', async () => {
    const messages = [text('u1', 'Please read the config loader.'), userText(40, 'u2')];
    const viaThread = await newSession(t, 'tenant-a', 'm-bytes');
    await newSession(t, 'tenant-a', 'm-parsed');
    const fromBytes = await append('tenant-a', 'm-bytes', unparsed(JSON.stringify({ messages })));
    const fromParsed = await append('tenant-a', 'm-parsed', parsed(messages));
    expect(fromBytes.messages).toEqual(fromParsed.messages);
    expect(fromBytes.status.tokens).toBe(fromParsed.status.tokens);
    expect(await messageIdsOf(t.database.db, viaThread.pk)).toEqual(['u1', 'u2']);
  });

  it('refuses bytes that are not JSON, and JSON the schema refuses, writing nothing', async () => {
    const session = await newSession(t, 'tenant-a', 'm-bad-bytes');
    await expect(append('tenant-a', 'm-bad-bytes', unparsed('{"messages": ['))).rejects.toBeInstanceOf(
      UnparsableBody,
    );
    const refused = await append(
      'tenant-a',
      'm-bad-bytes',
      unparsed(JSON.stringify({ messages: [{ role: 'tool', parts: [] }] })),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidInput);
    expect((refused as InvalidInput).issues?.[0]?.path).toBe('body.messages.0.role');
    expect(await messageIdsOf(t.database.db, session.pk)).toEqual([]);
  });
});
