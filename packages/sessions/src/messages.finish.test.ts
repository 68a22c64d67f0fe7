/**
 * Finishing a streamed turn and reading the history back, at the package's boundary: the tool
 * result upserted by call id with its stored input counted, the status and trigger answered as
 * an append answers them, and the refusals (an implausible report, an unknown message, another
 * tenant's session).
 */
import { describe, expect, it } from 'vitest';
import { PatchMessageBody } from '@compactor/contract';
import { NotFoundError } from '@compactor/db';
import { getTokenizer } from '@compactor/tokenizer';
import { InvalidInput, SessionNotFound } from './errors';
import { historyPage } from './history-page';
import { newSession, parsedMessages, useTestSessions, userText } from './test-support/session-resources';

const t = useTestSessions();
const count = (text: string) => getTokenizer('o200k_base').countSync(text);

const finish = (tenantId: string, id: string, messageId: string, body: unknown) =>
  t.messages.finish({ tenantId, id }, messageId, PatchMessageBody.parse(body), t.log);

/** A session whose last message is an assistant turn still running a tool call. */
async function streaming(id: string) {
  const session = await newSession(t, 'tenant-a', id);
  await t.messages.append(
    { tenantId: 'tenant-a', id },
    parsedMessages([
      userText(20),
      {
        id: 'turn',
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'c1', tool: 'bash', status: 'running', input: { command: 'ls' } }],
      },
    ]),
    t.log,
  );
  return session;
}

describe('SessionMessages.finish', () => {
  it('upserts the tool result by call id, keeping and counting the stored input', async () => {
    await streaming('f-turn');
    const message = await finish('tenant-a', 'f-turn', 'turn', {
      finish: 'tool-calls',
      usage: { input: 100, output: 10 },
      parts: [{ type: 'tool', callId: 'c1', tool: 'bash', status: 'completed', output: 'a.ts\nb.ts' }],
    });
    expect(message).toMatchObject({ id: 'turn', finish: 'tool-calls', usage: { input: 100, output: 10 } });
    expect(message.parts).toHaveLength(1);
    expect(message.parts[0]).toMatchObject({
      status: 'completed',
      input: { command: 'ls' },
      output: 'a.ts\nb.ts',
    });
    expect(message.parts[0]?.tokens).toBe(count('bash') + count('{"command":"ls"}') + count('a.ts\nb.ts'));
    expect(message.status.tokens).toBeGreaterThan(20);
    expect(message.compaction).toBeNull();
  });

  it('starts the auto compaction when the finished turn reports a prompt over the threshold', async () => {
    await streaming('f-cross');
    await t.messages.append(
      { tenantId: 'tenant-a', id: 'f-cross' },
      parsedMessages([userText(6_000)]),
      t.log,
    );
    const message = await finish('tenant-a', 'f-cross', 'turn', {
      finish: 'stop',
      usage: { input: 7_500, output: 10 },
      parts: [{ type: 'tool', callId: 'c1', tool: 'bash', status: 'completed', output: 'ok' }],
    });
    expect(message.compaction).toMatchObject({ reason: 'auto', status: 'pending' });
    expect(message.status.activeCompaction?.id).toBe(message.compaction?.id);
  });

  it('refuses a usage report no turn can have made, naming body.usage, and changes nothing', async () => {
    await streaming('f-usage');
    const refused = await finish('tenant-a', 'f-usage', 'turn', {
      finish: 'stop',
      usage: { input: 10_000_000, output: 1 },
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidInput);
    expect((refused as InvalidInput).issues?.map((i) => i.path)).toEqual(['body.usage']);
    const page = await historyPage(
      t.database.db,
      { tenantId: 'tenant-a', id: 'f-usage' },
      { afterSeq: 0, limit: 5 },
    );
    expect(page.messages.at(-1)).toMatchObject({ id: 'turn', finish: null, usage: null });
  });

  it("refuses an unknown message (db NotFoundError) and another tenant's session", async () => {
    await streaming('f-refused');
    await expect(finish('tenant-a', 'f-refused', 'nope', { finish: 'stop' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(finish('tenant-b', 'f-refused', 'turn', { finish: 'stop' })).rejects.toBeInstanceOf(
      SessionNotFound,
    );
  });
});

describe('historyPage', () => {
  it("pages the raw history by seq, and finds no other tenant's session", async () => {
    await newSession(t, 'tenant-a', 'h-pages');
    const batch = Array.from({ length: 5 }, (_, i) => userText(3, `m${i + 1}`));
    await t.messages.append({ tenantId: 'tenant-a', id: 'h-pages' }, parsedMessages(batch), t.log);
    const target = { tenantId: 'tenant-a', id: 'h-pages' };
    const first = await historyPage(t.database.db, target, { afterSeq: 0, limit: 2 });
    expect(first.messages.map((m) => m.id)).toEqual(['m1', 'm2']);
    expect(first.nextAfterSeq).toBe(2);
    const last = await historyPage(t.database.db, target, { afterSeq: 4, limit: 2 });
    expect(last).toMatchObject({ messages: [{ id: 'm5' }], nextAfterSeq: null });
    await expect(
      historyPage(t.database.db, { tenantId: 'tenant-b', id: 'h-pages' }, { afterSeq: 0, limit: 2 }),
    ).rejects.toBeInstanceOf(SessionNotFound);
  });
});
